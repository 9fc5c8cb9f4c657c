//! fio's steady-state options (`steadystate`/`ss`, `steadystate_duration`/
//! `ss_dur`, `steadystate_ramp_time`/`ss_ramp`) as storlab's gate.
//!
//! fio looks for steady state from `ramp_time` + `steadystate_ramp_time` to
//! the end of its run (`ramp_time` + `runtime`) and stops the job once the
//! figure has settled over the window; its figures cover the run up to then.
//! storlab's gate ends the ramp once settled and then measures `runtime`.
//! So the gate watches the same period fio watches: storlab's `ramp_time`
//! (the longest ramp) is fio's `ramp_time` + `runtime`, its
//! `steadystate_ramp_time` fio's `ramp_time` + `steadystate_ramp_time`, and a
//! note says the measured period follows. fio's default window is 0 (no
//! detection) and its default criterion `iops_slope:0.01%`; a fixed limit
//! (`iops:2`, not a % of the mean) is refused.

use super::super::units::{format_duration, parse_duration};
use super::super::validate::SpecError;
use super::checked;
use super::ini::Opt;
use toml::Value;

/// fio's default `steadystate`.
pub const FIO_DEFAULT: &str = "iops_slope:0.01%";

/// The steady-state options of one job, as (text, line) where given.
#[derive(Default)]
pub struct SteadyOpts {
    criterion: Option<(String, usize)>,
    window: Option<(String, usize)>,
    delay: Option<(String, usize)>,
}

/// What the gate adds to a job: per-point keys with their lines, or a note.
pub struct SteadyKeys {
    /// `ramp_time`, `steadystate`, `steadystate_duration`,
    /// `steadystate_ramp_time`.
    pub point: Vec<(String, Value, usize)>,
    /// How storlab's run differs from fio's.
    pub note: Option<String>,
}

impl SteadyOpts {
    /// Take `o` if it is one of the steady-state options: `None` if not,
    /// else whether its value is one storlab can honour.
    pub fn take(&mut self, o: &Opt, at: &str) -> Option<Result<(), SpecError>> {
        let text = o.value.as_deref().unwrap_or_default().trim().to_string();
        let (key, slot) = match o.key.as_str() {
            "steadystate" | "ss" => ("steadystate", &mut self.criterion),
            "steadystate_duration" | "ss_dur" => ("steadystate_duration", &mut self.window),
            "steadystate_ramp_time" | "ss_ramp" => ("steadystate_ramp_time", &mut self.delay),
            _ => return None,
        };
        if key == "steadystate" && text.contains(':') && !text.ends_with('%') {
            return Some(Err(SpecError::invalid(
                &o.key,
                &text,
                "METRIC:P% (storlab's limit is a share of the window's mean; \
                 a fixed limit such as iops:2 is not taken)",
            )
            .context(at)));
        }
        Some(checked(key, &text, at).map(|_| *slot = Some((text, o.line))))
    }

    /// The gate's keys for a job ramping `ramp` (text, line) and running at
    /// most `runtime` (text, line); `header` names the job in errors.
    pub fn keys(
        &self,
        ramp: Option<&(String, usize)>,
        runtime: Option<&(String, usize)>,
        header: &str,
    ) -> Result<SteadyKeys, SpecError> {
        let secs = |o: Option<&(String, usize)>| {
            o.and_then(|(t, _)| parse_duration(t).ok())
                .unwrap_or_default()
        };
        let window = secs(self.window.as_ref());
        let Some((_, window_line)) = self.window.as_ref().filter(|_| !window.is_zero()) else {
            let note = (self.criterion.is_some() || self.delay.is_some()).then(|| {
                "steadystate_duration is 0 (fio's default): fio detects no steady state, \
                 nor does storlab"
                    .to_string()
            });
            return Ok(SteadyKeys {
                point: Vec::new(),
                note,
            });
        };
        let run = secs(runtime);
        if run.is_zero() {
            return Err(SpecError::invalid(
                "runtime",
                runtime.map_or("(none)", |r| r.0.as_str()),
                "a duration > 0 with steadystate_duration (how long fio looks for steady state)",
            )
            .context(header));
        }
        let (ramp, delay) = (secs(ramp), secs(self.delay.as_ref()));
        let text = |d| Value::String(format_duration(d).replace(' ', ""));
        let line = |o: Option<&(String, usize)>| o.map_or(*window_line, |o| o.1);
        let criterion = self
            .criterion
            .as_ref()
            .map_or(FIO_DEFAULT, |c| c.0.as_str());
        let mut point = vec![
            ("ramp_time".into(), text(ramp + run), line(runtime)),
            (
                "steadystate".into(),
                Value::String(criterion.into()),
                line(self.criterion.as_ref()),
            ),
            ("steadystate_duration".into(), text(window), *window_line),
        ];
        if !(ramp + delay).is_zero() {
            point.push((
                "steadystate_ramp_time".into(),
                text(ramp + delay),
                line(self.delay.as_ref()),
            ));
        }
        let note = format!(
            "steadystate {criterion}: fio stops the job once steady and reports the run up to \
             then; storlab looks for steady state over the same period (ramp_time {} = fio's \
             ramp_time + runtime), ends the ramp there and then measures runtime {}",
            format_duration(ramp + run),
            format_duration(run)
        );
        Ok(SteadyKeys {
            point,
            note: Some(note),
        })
    }
}
