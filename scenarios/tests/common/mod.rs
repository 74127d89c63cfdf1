//! What the error-message tests share: comparing a rendered message with
//! the expected text.

/// Compares `actual` with `expected` (leading and trailing newlines of
/// `expected` ignored), failing with both. With `SCENARIOS_DUMP=<dir>` set,
/// `actual` is also written to `<dir>/<test name>`, for reviewing and
/// updating expectations.
#[track_caller]
pub fn assert_rendered(actual: &str, expected: &str) {
    if let Ok(dir) = std::env::var("SCENARIOS_DUMP") {
        let name = std::thread::current()
            .name()
            .unwrap_or("x")
            .replace("::", "_");
        let _ = std::fs::write(format!("{dir}/{name}"), actual);
    }
    let expected = expected.trim_start_matches('\n').trim_end_matches('\n');
    if actual != expected {
        panic!("\n--- expected:\n{expected}\n--- actual:\n{actual}\n---\n");
    }
}
