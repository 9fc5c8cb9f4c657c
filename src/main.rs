fn main() {
    let args: Vec<String> = std::env::args().collect();
    std::process::exit(storlab::cli::main_with(args));
}
