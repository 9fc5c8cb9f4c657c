//! Output: exporters turn a run into bytes (they do no I/O); the progress
//! observer prints live lines while a run measures.

pub mod csv;
pub mod diff;
pub mod fiobins;
pub mod fiojson;
pub mod fiosteady;
pub mod format;
pub mod hosts;
pub mod html;
pub mod live;
pub mod markdown;
pub mod meta;
pub mod network;
pub mod progress;
pub mod relative;
pub mod stats_ci;
pub mod svg;
pub mod text;
pub mod vocab;
