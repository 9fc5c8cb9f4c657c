//! The `storlab` binary: parses the command line and exits with its code (see `storlab::cli`).

fn main() {
    let args: Vec<String> = std::env::args().collect();
    std::process::exit(storlab::cli::main_with(args));
}
