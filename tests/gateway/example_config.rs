//! The shipped config.example.toml loads and matches the built-in defaults.

use codex_gateway::config::Config;

#[test]
fn example_config_loads_and_equals_the_defaults() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config.example.toml");
    let example = Config::load_with_env(Some(&path), Vec::new()).expect("example config loads");
    let defaults = Config::load_with_env(None, Vec::new()).unwrap();
    assert_eq!(format!("{example:?}"), format!("{defaults:?}"));
}
