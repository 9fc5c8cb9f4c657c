//! Output: exporters turn a run into bytes (they do no I/O); the progress
//! observer prints live lines while a run measures.

pub mod csv;
pub mod progress;
pub mod text;
