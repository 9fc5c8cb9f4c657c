//! Headless Chromium (Debian's `chromium`, installed by ./setup.sh): a page
//! must draw and log no console error, and its DOM is read back.

use std::path::Path;

/// The Chromium binary; fails the test when it is not installed.
pub fn binary() -> &'static str {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap_or_else(|| {
            panic!("chromium is not installed: run ./setup.sh (it installs Debian's chromium)")
        })
}

/// Render the HTML file `page` at 1400x2000 with its profile and screenshot
/// in `work`: the screenshot must be well above a blank page's size and the
/// console free of errors. Returns the page's DOM.
pub fn render(page: &Path, work: &Path) -> String {
    let chromium = binary();
    let name = page.file_name().unwrap().to_string_lossy();
    let png = work.join(format!("{name}.png"));
    let profile = work.join("chromium-profile");
    let out = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1400,2000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("start chromium");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let size = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
    assert!(
        size > 20_000,
        "screenshot {} is {size} bytes (blank page?); chromium stderr:\n{stderr}",
        png.display()
    );
    let bad: Vec<&str> = stderr
        .lines()
        .filter(|l| {
            l.contains("Uncaught")
                || (l.contains("CONSOLE") && l.contains("ERROR"))
                || l.contains(":CONSOLE(")
        })
        .collect();
    assert!(bad.is_empty(), "console errors:\n{}", bad.join("\n"));
    let dom = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("start chromium");
    String::from_utf8_lossy(&dom.stdout).into_owned()
}

/// The DOM of the page at `url` (a live page) once its scripts ran for
/// `budget_ms` of virtual time (Chromium waits for their fetches), with its
/// profile in `work`; fails on a console error.
pub fn dump_url(url: &str, work: &Path, budget_ms: u32) -> String {
    let out = std::process::Command::new(binary())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!(
            "--user-data-dir={}",
            work.join("chromium-live").display()
        ))
        .arg(format!("--virtual-time-budget={budget_ms}"))
        .arg("--dump-dom")
        .arg(url)
        .output()
        .expect("start chromium");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let bad: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("Uncaught") || l.contains(":CONSOLE("))
        .collect();
    assert!(bad.is_empty(), "console errors:\n{}", bad.join("\n"));
    String::from_utf8_lossy(&out.stdout).into_owned()
}
