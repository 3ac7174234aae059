//! The repository keeps its own promises (rust-analyzer's `tidy.rs` is the model): the
//! code map names only paths that exist, every setting is in config.example.toml, and no
//! source file outgrows what one person reads at once.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use codex_gateway::config::Config;

/// Lines of code (not blank, not comments, before the unit tests) a source file may hold.
const MAX_CODE_LINES: usize = 500;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every `path` in backticks in docs/architecture.md that names a file or folder of the
/// repository (it has a `/` and starts at one of its top folders) exists.
#[test]
fn the_code_map_names_only_paths_that_exist() {
    let doc = read("docs/architecture.md");
    let tops = [
        "src/",
        "crates/",
        "tests/",
        "migrations/",
        "scripts/",
        "benches/",
        "docs/",
    ];
    let named: BTreeSet<&str> = doc
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| tops.iter().any(|top| span.starts_with(top)))
        .filter(|span| !span.contains(' ') && !span.contains('*'))
        .collect();
    assert!(named.len() > 20, "the map names {} paths", named.len());
    let missing: Vec<&&str> = named
        .iter()
        .filter(|path| !root().join(path.trim_end_matches(':')).exists())
        .collect();
    assert!(missing.is_empty(), "docs/architecture.md names {missing:?}");
}

/// The settings of config.example.toml: `section.key` for each key set or shown commented
/// out (`# key = …`), and each `[[section.table]]`.
fn example_settings() -> BTreeSet<String> {
    let mut section = String::new();
    // The keys of an array of tables (`[[codex.remote]]`) are its items', not settings.
    let mut in_array = false;
    let mut settings = BTreeSet::new();
    for line in read("config.example.toml").lines() {
        let line = line.trim_start_matches('#').trim();
        if let Some(table) = line.strip_prefix("[[").and_then(|l| l.strip_suffix("]]")) {
            settings.insert(table.to_owned());
            in_array = true;
        } else if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.to_owned();
            in_array = false;
        } else if let Some((key, _)) = line.split_once('=').filter(|_| !in_array) {
            let key = key.trim();
            if !key.is_empty() && key.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
                settings.insert(format!("{section}.{key}"));
            }
        }
    }
    settings
}

/// Every field of `Config` is in config.example.toml under its section; with the test
/// beside it (`example_config`) that the file's values are the defaults, a reader of the
/// example sees every setting as it is when left out.
#[test]
fn every_setting_is_in_the_example_config() {
    let defaults = serde_json::to_value(Config::default()).unwrap();
    let example = example_settings();
    let mut missing = Vec::new();
    for (section, fields) in defaults.as_object().unwrap() {
        let fields = fields.as_object().expect("each section is a table");
        for key in fields.keys() {
            let setting = format!("{section}.{key}");
            if !example.contains(&setting) {
                missing.push(setting);
            }
        }
    }
    assert!(
        missing.is_empty(),
        "not in config.example.toml: {missing:?}"
    );
    // And nothing there that the config does not know (a typo would be ignored silently
    // by readers who copy it; the loader refuses unknown keys).
    let known: BTreeSet<String> = defaults
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(section, fields)| {
            let keys = fields.as_object().unwrap().keys();
            keys.map(move |key| format!("{section}.{key}"))
        })
        .collect();
    let unknown: Vec<&String> = example.difference(&known).collect();
    assert!(unknown.is_empty(), "config.example.toml names {unknown:?}");
}

fn rust_files(folder: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(folder).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// Lines of code before a file's unit tests: not blank, not comments.
fn code_lines(text: &str) -> usize {
    text.lines()
        .take_while(|line| !line.starts_with("#[cfg(test)]"))
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("//"))
        .count()
}

#[test]
fn no_source_file_is_over_500_lines_of_code() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    rust_files(&root().join("crates"), &mut files);
    assert!(files.len() > 50, "{} files", files.len());
    let long: Vec<(usize, String)> = files
        .iter()
        .map(|path| {
            let lines = code_lines(&std::fs::read_to_string(path).unwrap());
            let shown = path.strip_prefix(root()).unwrap().display().to_string();
            (lines, shown)
        })
        .filter(|(lines, _)| *lines > MAX_CODE_LINES)
        .collect();
    assert!(
        long.is_empty(),
        "over {MAX_CODE_LINES} lines of code: {long:?}"
    );
    assert_eq!(
        code_lines("fn a() {}\n\n// note\n#[cfg(test)]\nfn t() {}"),
        1
    );
}

/// The Codex version the client names as tested is the one the scripts, the image and
/// the README install.
#[test]
fn one_codex_version_everywhere() {
    let tested = codex::TESTED_VERSION;
    let places = [
        ("scripts/install-codex", format!("CODEX_VERSION={tested}")),
        ("Dockerfile", format!("ARG CODEX_VERSION={tested}")),
        ("README.md", format!("@openai/codex@{tested}")),
    ];
    for (path, expected) in places {
        assert!(read(path).contains(&expected), "{path} lacks {expected:?}");
    }
}
