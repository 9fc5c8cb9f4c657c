//! storlab: a storage protocol benchmark.
//!
//! Data flows spec → plan → runner → engine threads over a [`engine::Backend`]
//! → interval [`stats::Snapshot`]s merged by addition → reports. See
//! ARCHITECTURE.md for the homes of each concern.
#![deny(missing_docs)]

pub mod backends;
pub mod cli;
pub mod compare;
pub mod deploy;
pub mod engine;
pub mod fleet;
pub mod io;
pub mod lab;
pub mod linkmodel;
pub mod measure;
pub mod media;
pub mod meta;
pub mod model;
pub mod plan;
pub mod prepare;
pub mod process;
pub mod report;
pub mod runner;
pub mod stats;
pub mod store;
pub mod study;
pub mod target;
pub mod verify;
pub mod workload;
