//! Integration tests: the real binary, run on the null backend and on temp files.

mod bad_input;
mod catalogue;
mod common;
mod curve;
mod exit_codes;
mod fio_json;
mod imports;
mod interrupt;
mod replay;
mod results_diff;
mod run_file;
mod run_null;
mod wire;
mod workloads;
