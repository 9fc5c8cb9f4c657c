//! The one error every check of a workload gives: a rejected value named in
//! one line (`SpecError`). Its own file so that the settings' parsers
//! (`steady.rs`) and the checks (`validate.rs`) both use it without
//! importing each other.

use std::fmt;

/// A rejected value, rendered as one line:
/// `[CONTEXT: ]invalid FIELD = VALUE (allowed: ALLOWED)`.
///
/// When `field` starts with "unknown " (see [`SpecError::unknown`]) the value is a
/// name that was not recognised and the line reads `[CONTEXT: ]unknown key "VALUE"
/// (allowed: ...)`. When it starts with "unsupported " (see
/// [`SpecError::unsupported`]) the name is recognised but refused, and the line
/// reads `[CONTEXT: ]KIND "VALUE" is not supported by storlab (WHY)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError {
    /// The field or key ("bs", "rwmixread"), "unknown KIND" for unrecognised
    /// names, or "unsupported KIND" for recognised names storlab refuses.
    pub field: String,
    /// The offending value as the user wrote it, or as storlab formats it.
    pub value: String,
    /// What would have been accepted (for "unsupported KIND": why it is refused).
    pub allowed: String,
    /// Where: "job file jobs/x.toml", "load point \"vms=32\"", "group readers".
    pub context: Option<String>,
}

impl SpecError {
    /// An out-of-range or malformed value.
    pub fn invalid(
        field: impl Into<String>,
        value: impl fmt::Display,
        allowed: impl Into<String>,
    ) -> Self {
        SpecError {
            field: field.into(),
            value: value.to_string(),
            allowed: allowed.into(),
            context: None,
        }
    }

    /// A name that is not recognised: `kind` is what it was meant to be ("workload", "key").
    pub fn unknown(kind: &str, name: impl Into<String>, allowed: impl Into<String>) -> Self {
        SpecError {
            field: format!("unknown {kind}"),
            value: name.into(),
            allowed: allowed.into(),
            context: None,
        }
    }

    /// A name that is recognised but that storlab refuses: `kind` is what it is
    /// ("fio option"), `why` what it would change or what to use instead. Unlike
    /// [`SpecError::unknown`] the line does not read as a typo.
    pub fn unsupported(kind: &str, name: impl Into<String>, why: impl Into<String>) -> Self {
        SpecError {
            field: format!("unsupported {kind}"),
            value: name.into(),
            allowed: why.into(),
            context: None,
        }
    }

    /// Prefix a context (outermost first: the file, then the point, then the group).
    pub fn context(mut self, ctx: impl Into<String>) -> Self {
        let ctx = ctx.into();
        self.context = Some(match self.context.take() {
            Some(inner) => format!("{ctx}, {inner}"),
            None => ctx,
        });
        self
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(c) = &self.context {
            write!(f, "{c}: ")?;
        }
        if let Some(kind) = self.field.strip_prefix("unsupported ") {
            return write!(
                f,
                "{kind} \"{}\" is not supported by storlab ({})",
                self.value, self.allowed
            );
        }
        if self.field.starts_with("unknown ") {
            write!(f, "{} \"{}\"", self.field, self.value)?;
        } else {
            write!(f, "invalid {} = {}", self.field, self.value)?;
        }
        write!(f, " (allowed: {})", self.allowed)
    }
}

impl std::error::Error for SpecError {}
