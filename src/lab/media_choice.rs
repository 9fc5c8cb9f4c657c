//! What a lab serves its store on (`--media`, `--media-file`): no media
//! layer at all, or a medium the media server emulates. The choice is
//! checked once, where it is made ([`MediaChoice::parse`]); the lab, its
//! record and the commands that bring labs up carry it from there (the
//! media server, a process of its own, reads the name again when it starts).

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The media `lab up` (and `compare --lab`, `study`) serves the store on
/// unless told otherwise: the preset that resembles the studies' arrays
/// (15k-rpm spindles behind an NVRAM-protected write-back cache), so the
/// lab measures a storage regime rather than loopback CPU. `--media ram`
/// keeps the loopback ceiling of labs before media.
pub const LAB_DEFAULT_MEDIA: &str = crate::media::presets::DEFAULT_MEDIA;

/// `--media none`'s name.
const NONE: &str = "none";

/// What the lab serves its store on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "Recorded", into = "Recorded")]
pub enum MediaChoice {
    /// `--media none`: no media layer at all. Every server and the loop
    /// device open the backing file itself, as labs did before media; for
    /// measuring what the media layer costs (bench/media_ceiling.sh), not
    /// for studies.
    None,
    /// A medium the media server emulates.
    Emulated(Emulated),
}

/// A medium the media server emulates, as `--media` named it: a preset
/// (built in, or of the media file) or `fixed:...`. Made only by
/// [`MediaChoice::parse`], which checks it, or read back from a lab's record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Emulated {
    spec: String,
    file: Option<PathBuf>,
}

impl Emulated {
    /// Its name as `--media` (and `storlab media-serve --media`) takes it.
    pub fn spec(&self) -> &str {
        &self.spec
    }

    /// The media file its preset comes from, if any.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }
}

impl MediaChoice {
    /// The choice `--media spec` (and `--media-file file`) makes: `none`, or
    /// a medium the presets resolve. The error is one line naming the
    /// option, the value, the file and what is allowed.
    pub fn parse(spec: &str, file: Option<&Path>) -> Result<MediaChoice, String> {
        if spec == NONE {
            return match file {
                None => Ok(MediaChoice::None),
                Some(f) => Err(format!(
                    "invalid --media \"none\" with --media-file {}: none takes no media file \
                     (it serves the backing file itself, with no media layer)",
                    f.display()
                )),
            };
        }
        crate::media::presets::resolve(spec, file).map_err(|e| match file {
            None => format!("invalid --media {spec:?}: {e}"),
            Some(f) => format!(
                "invalid --media {spec:?} (--media-file {}): {e}",
                f.display()
            ),
        })?;
        Ok(MediaChoice::Emulated(Emulated {
            spec: spec.to_string(),
            file: file.map(Path::to_path_buf),
        }))
    }

    /// The choice of a command's `--media` and `--media-file` options, the
    /// lab's default medium ([`LAB_DEFAULT_MEDIA`]) when `--media` is not
    /// given.
    pub fn from_options(media: Option<&str>, file: Option<&Path>) -> Result<MediaChoice, String> {
        MediaChoice::parse(media.unwrap_or(LAB_DEFAULT_MEDIA), file)
    }

    /// The lab's default medium, a built-in preset (no file to read).
    pub fn lab_default() -> MediaChoice {
        MediaChoice::Emulated(Emulated {
            spec: LAB_DEFAULT_MEDIA.to_string(),
            file: None,
        })
    }

    /// Its name as `--media` takes it: `none`, or the medium's.
    pub fn spec(&self) -> &str {
        match self {
            MediaChoice::None => NONE,
            MediaChoice::Emulated(m) => m.spec(),
        }
    }

    /// The media file of an emulated medium's preset, if any.
    pub fn file(&self) -> Option<&Path> {
        match self {
            MediaChoice::None => None,
            MediaChoice::Emulated(m) => m.file(),
        }
    }
}

/// A choice as a lab's record (`state.json`, `media`) keeps it: the name
/// `--media` took (`none` for no layer) and the media file.
#[derive(Clone, Serialize, Deserialize)]
struct Recorded {
    spec: String,
    #[serde(default)]
    file: Option<PathBuf>,
}

impl From<Recorded> for MediaChoice {
    /// A record is what a checked choice wrote: read back as it was.
    fn from(r: Recorded) -> MediaChoice {
        if r.spec == NONE {
            MediaChoice::None
        } else {
            MediaChoice::Emulated(Emulated {
                spec: r.spec,
                file: r.file,
            })
        }
    }
}

impl From<MediaChoice> for Recorded {
    fn from(c: MediaChoice) -> Recorded {
        Recorded {
            spec: c.spec().to_string(),
            file: c.file().map(Path::to_path_buf),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_media_name_or_file_is_named_before_anything_starts() {
        let e = MediaChoice::parse("nvme-typo", None).unwrap_err();
        assert!(
            e.starts_with("invalid --media \"nvme-typo\": ") && e.contains("allowed"),
            "{e}"
        );
        let e = MediaChoice::parse("mine", Some(Path::new("/nonexistent/media.toml"))).unwrap_err();
        assert!(
            e.starts_with("invalid --media \"mine\" (--media-file /nonexistent/media.toml): "),
            "{e}"
        );
        let e = MediaChoice::parse("none", Some(Path::new("/m.toml"))).unwrap_err();
        assert!(
            e.starts_with("invalid --media \"none\" with --media-file /m.toml"),
            "{e}"
        );
    }

    #[test]
    fn none_is_no_media_layer_and_a_preset_or_fixed_is_emulated() {
        assert_eq!(MediaChoice::parse("none", None), Ok(MediaChoice::None));
        let m = MediaChoice::parse("fixed:200", None).unwrap();
        assert!(matches!(&m, MediaChoice::Emulated(e) if e.spec() == "fixed:200"));
        assert_eq!((m.spec(), m.file()), ("fixed:200", None));
        assert_eq!(MediaChoice::None.spec(), "none");
        // The default is a built-in preset, as checked as any other.
        assert_eq!(
            MediaChoice::from_options(None, None),
            Ok(MediaChoice::lab_default())
        );
        assert_eq!(MediaChoice::lab_default().spec(), LAB_DEFAULT_MEDIA);
    }

    #[test]
    fn a_choice_is_recorded_as_its_name_and_file() {
        #[derive(Serialize, Deserialize, PartialEq, Debug)]
        struct Holder {
            #[serde(flatten)]
            media: MediaChoice,
            mountpoint: PathBuf,
        }
        let none = r#"{"spec":"none","file":null,"mountpoint":"/b"}"#;
        let h: Holder = serde_json::from_str(none).unwrap();
        assert_eq!(h.media, MediaChoice::None);
        assert_eq!(serde_json::to_string(&h).unwrap(), none);
        let preset = r#"{"spec":"mine","file":"/m.toml","mountpoint":"/s/media"}"#;
        let h: Holder = serde_json::from_str(preset).unwrap();
        assert_eq!(
            (h.media.spec(), h.media.file()),
            ("mine", Some(Path::new("/m.toml")))
        );
        assert_eq!(serde_json::to_string(&h).unwrap(), preset);
        // Without a file, as older records may be.
        let h: Holder = serde_json::from_str(r#"{"spec":"ram","mountpoint":"/s"}"#).unwrap();
        assert_eq!((h.media.spec(), h.media.file()), ("ram", None));
    }
}
