//! A real browser reads the built book. The book is built with mdBook into a
//! temporary directory; every internal link and `#anchor` of every page is
//! resolved against the built files, and every page is then loaded in
//! headless Chromium, which reports each figure as it laid it out: an image
//! that did not load, or a figure drawn with zero width or height (an SVG
//! that does not render), fails the test with the page and the file named.
//!
//! Chromium comes from the distribution (`.ci/run` installs Debian's
//! `chromium`); where no browser or no mdBook is installed, the test says so
//! on stderr and passes without checking, rather than fail on a machine that
//! cannot run it. `BOUNCE_CHROMIUM` names another browser binary.
//!
//! With `BOUNCE_BOOK_SCREENSHOTS=DIR` (a directory outside the repository)
//! the test also writes one PNG per page there, to be looked at.
//!
//! How the browser reports: each page is copied with a small script added
//! that, once the page has loaded, writes the laid-out size of every figure
//! into the page as JSON; `chromium --dump-dom` prints the page after its
//! scripts ran, and the test reads the JSON back. No debugging protocol, no
//! extra dependency.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the repository root")
        .to_path_buf()
}

/// The browser binary, if one is installed.
fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("BOUNCE_CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| find_in_path(name))
}

/// The mdBook binary: the one `.ci/run` installs into Cargo's bin directory,
/// else one on the PATH.
fn mdbook() -> Option<PathBuf> {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    if let Some(home) = cargo_home {
        let candidate = home.join("bin").join("mdbook");
        if candidate.is_file() {
            return Some(candidate);
        }
    }
    find_in_path("mdbook")
}

fn find_in_path(name: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// A fresh directory under the system's temporary directory, never the
/// same twice in one process (the two tests run in parallel).
fn scratch(name: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("bounce-{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temporary directory");
    dir
}

/// The book's pages: the top-level HTML files mdBook wrote, but not its
/// 404 page, its table of contents or the one-page print version (which
/// repeats every chapter).
fn pages(site: &Path) -> Vec<String> {
    let mut pages: Vec<String> = std::fs::read_dir(site)
        .expect("built book")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".html"))
        .filter(|n| !matches!(n.as_str(), "404.html" | "print.html" | "toc.html"))
        .collect();
    pages.sort();
    pages
}

/// Undo the HTML escapes mdBook and Chromium write in attributes and text.
fn unescape(text: &str) -> String {
    text.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// The values of every `attr="..."` in an HTML text.
fn attribute_values(html: &str, attr: &str) -> Vec<String> {
    let needle = format!(" {attr}=\"");
    let mut values = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find(&needle) {
        rest = &rest[at + needle.len()..];
        if let Some(end) = rest.find('"') {
            values.push(unescape(&rest[..end]));
            rest = &rest[end..];
        }
    }
    values
}

/// Every broken internal link, anchor or resource of the built site: a
/// `href` or `src` naming a file that is not there, or a `#fragment` with no
/// element of that `id` in its page.
fn broken_links(site: &Path, pages: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    let ids_of = |page: &Path| -> Option<Vec<String>> {
        std::fs::read_to_string(page)
            .ok()
            .map(|html| attribute_values(&html, "id"))
    };
    for page in pages {
        let html = std::fs::read_to_string(site.join(page)).expect("page");
        let mut targets = attribute_values(&html, "href");
        targets.extend(attribute_values(&html, "src"));
        for target in targets {
            let external = target.contains("://")
                || target.starts_with("//")
                || target.starts_with("mailto:")
                || target.starts_with("data:")
                || target.starts_with("javascript:");
            if external || target.is_empty() {
                continue;
            }
            let (file, fragment) = match target.split_once('#') {
                Some((f, frag)) => (f, Some(frag)),
                None => (target.as_str(), None),
            };
            let file = file.split('?').next().unwrap_or(file);
            let file = file.replace("%20", " ");
            let target_path = if file.is_empty() {
                site.join(page)
            } else {
                site.join(&file)
            };
            if !target_path.exists() {
                problems.push(format!("{page}: link to `{target}`: no such file"));
                continue;
            }
            if let Some(fragment) = fragment.filter(|f| !f.is_empty()) {
                let ids = ids_of(&target_path).unwrap_or_default();
                if !ids.iter().any(|id| id == fragment) {
                    problems.push(format!(
                        "{page}: link to `{target}`: no element with id `{fragment}` there"
                    ));
                }
            }
        }
    }
    problems
}

/// Added to each page: once it has loaded, every figure's laid-out size,
/// as JSON in a `<pre>` the test reads back from the dumped DOM. Images in
/// mdBook's zoom wrapper are copies hidden until clicked: only their natural
/// size counts for them.
const PROBE: &str = r#"<script>
window.addEventListener('load', function () {
  var out = [];
  document.querySelectorAll('main img, main svg, main object').forEach(function (el) {
    var r = el.getBoundingClientRect();
    out.push({
      tag: el.tagName,
      src: el.getAttribute('src') || el.getAttribute('data') || '(inline svg)',
      width: r.width,
      height: r.height,
      natural_width: el.tagName === 'IMG' ? el.naturalWidth : -1,
      hidden_copy: !!el.closest('.img-wrapper')
    });
  });
  var pre = document.createElement('pre');
  pre.id = 'bounce-browser-check';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"#;

/// The flags every Chromium run gets: headless, no sandbox (CI runs as
/// root), nothing that reaches the network or a GPU, and a fresh profile.
fn chromium_command(browser: &Path, profile: &Path) -> Command {
    let mut command = Command::new(browser);
    command.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1280,1000",
    ]);
    command.arg(format!("--user-data-dir={}", profile.display()));
    command
}

/// Every figure that a browser could not show, page by page.
fn unrendered_figures(browser: &Path, site: &Path, pages: &[String]) -> Vec<String> {
    let probe_site = scratch("book-probe");
    copy_dir(site, &probe_site);
    let profile = scratch("chromium-profile");
    let mut problems = Vec::new();
    for page in pages {
        let path = probe_site.join(page);
        let html = std::fs::read_to_string(&path).expect("page");
        let with_probe = match html.rfind("</body>") {
            Some(at) => format!("{}{PROBE}{}", &html[..at], &html[at..]),
            None => format!("{html}{PROBE}"),
        };
        std::fs::write(&path, with_probe).expect("probe page");
        let output = chromium_command(browser, &profile)
            .arg("--virtual-time-budget=10000")
            .arg("--dump-dom")
            .arg(format!("file://{}", path.display()))
            .output()
            .unwrap_or_else(|e| panic!("running {}: {e}", browser.display()));
        let dom = String::from_utf8_lossy(&output.stdout);
        let Some(json) = dom
            .split_once("<pre id=\"bounce-browser-check\">")
            .and_then(|(_, rest)| rest.split_once("</pre>"))
            .map(|(json, _)| unescape(json))
        else {
            problems.push(format!(
                "{page}: the browser did not finish loading the page (exit {:?}; stderr ends: {})",
                output.status.code(),
                tail(&String::from_utf8_lossy(&output.stderr))
            ));
            continue;
        };
        let figures: Vec<serde_json::Value> = serde_json::from_str(&json)
            .unwrap_or_else(|e| panic!("{page}: the probe's report is not JSON ({e}): {json}"));
        for figure in figures {
            let src = figure["src"].as_str().unwrap_or("?");
            let width = figure["width"].as_f64().unwrap_or(0.0);
            let height = figure["height"].as_f64().unwrap_or(0.0);
            // A broken image and an empty SVG both have no natural width:
            // the file tells them apart.
            let natural_width = figure["natural_width"].as_f64().unwrap_or(-1.0);
            let file_exists = src == "(inline svg)" || probe_site.join(src).is_file();
            if !file_exists {
                problems.push(format!("{page}: image `{src}` did not load"));
            } else if natural_width == 0.0
                || (figure["hidden_copy"] != true && (width <= 0.0 || height <= 0.0))
            {
                problems.push(format!(
                    "{page}: figure `{src}` renders with zero size ({width} x {height})"
                ));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&probe_site);
    let _ = std::fs::remove_dir_all(&profile);
    problems
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().rev().take(3).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("copy target");
    for entry in std::fs::read_dir(from).expect("copy source") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// One screenshot per page into `dir`, to be looked at by a person.
fn screenshots(browser: &Path, site: &Path, pages: &[String], dir: &Path) {
    std::fs::create_dir_all(dir).expect("screenshot directory");
    let profile = scratch("chromium-shots");
    for page in pages {
        let png = dir.join(page.replace(".html", ".png"));
        let status = chromium_command(browser, &profile)
            .arg("--window-size=1280,2400")
            .arg("--hide-scrollbars")
            .arg(format!("--screenshot={}", png.display()))
            .arg(format!("file://{}", site.join(page).display()))
            .output()
            .expect("screenshot");
        assert!(status.status.success(), "screenshot of {page} failed");
    }
    let _ = std::fs::remove_dir_all(&profile);
}

#[test]
fn every_page_of_the_built_book_renders_in_a_browser() {
    let (Some(browser), Some(mdbook)) = (chromium(), mdbook()) else {
        eprintln!(
            "book_browser: SKIPPED: needs Chromium (chromium on the PATH, or BOUNCE_CHROMIUM) and mdBook \
             (cargo install mdbook --version 0.5.4); .ci/run installs both"
        );
        return;
    };
    let site = scratch("book-site");
    let built = Command::new(&mdbook)
        .arg("build")
        .arg(root().join("book"))
        .arg("--dest-dir")
        .arg(&site)
        .output()
        .expect("running mdbook");
    assert!(
        built.status.success(),
        "mdbook build failed: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    let pages = pages(&site);
    assert!(
        pages.len() >= 15,
        "the built book has only {} pages: {pages:?}",
        pages.len()
    );
    let mut problems = broken_links(&site, &pages);
    problems.extend(unrendered_figures(&browser, &site, &pages));
    if let Some(dir) = std::env::var_os("BOUNCE_BOOK_SCREENSHOTS") {
        let dir = PathBuf::from(dir);
        assert!(
            !dir.starts_with(root()),
            "BOUNCE_BOOK_SCREENSHOTS must be outside the repository"
        );
        screenshots(&browser, &site, &pages, &dir);
    }
    let _ = std::fs::remove_dir_all(&site);
    assert!(
        problems.is_empty(),
        "the built book has {} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// The checks find what they are for: a site with a missing image, a
/// broken link, a broken anchor and an SVG with zero size reports each.
#[test]
fn the_checks_catch_a_missing_image_a_broken_anchor_and_an_empty_svg() {
    let site = scratch("book-planted");
    std::fs::write(
        site.join("empty.svg"),
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="0" height="0"></svg>"#,
    )
    .unwrap();
    std::fs::write(
        site.join("good.svg"),
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20"><rect width="40" height="20"/></svg>"#,
    )
    .unwrap();
    std::fs::write(
        site.join("a.html"),
        r#"<html><body><main><h2 id="here">Here</h2>
<a href="b.html#there">ok</a> <a href="b.html#nowhere">bad anchor</a> <a href="c.html">bad file</a> <a href="https://example.org/x">external</a>
<img src="good.svg"> <img src="missing.svg"> <img src="empty.svg">
</main></body></html>"#,
    )
    .unwrap();
    std::fs::write(
        site.join("b.html"),
        r##"<html><body><main><p id="there">There</p><a href="#here">no such id here</a></main></body></html>"##,
    )
    .unwrap();
    let pages = pages(&site);
    assert_eq!(pages, ["a.html", "b.html"]);
    let links = broken_links(&site, &pages);
    assert_eq!(
        links,
        [
            "a.html: link to `b.html#nowhere`: no element with id `nowhere` there",
            "a.html: link to `c.html`: no such file",
            "a.html: link to `missing.svg`: no such file",
            "b.html: link to `#here`: no element with id `here` there",
        ]
    );
    let Some(browser) = chromium() else {
        eprintln!("book_browser: SKIPPED the browser half: no Chromium installed");
        return;
    };
    let figures = unrendered_figures(&browser, &site, &pages);
    let _ = std::fs::remove_dir_all(&site);
    assert_eq!(
        figures,
        [
            "a.html: image `missing.svg` did not load",
            "a.html: figure `empty.svg` renders with zero size (0 x 0)",
        ]
    );
}
