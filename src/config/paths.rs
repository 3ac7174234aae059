//! Relative paths in the config are read from the config file's folder, as whoever wrote
//! the file meant them, not from wherever the gateway happens to start (systemd starts it
//! in `/`, and a database opened there looks like every chat was lost). Without a file
//! they are read from the current folder. Either way they come out absolute.

use std::path::{Path, PathBuf};

use super::Config;

/// The folder relative paths are read from: the config file's, or the current one.
pub(super) fn base_folder(file: Option<&Path>) -> PathBuf {
    let current = || std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    match file.and_then(|file| std::path::absolute(file).ok()) {
        Some(file) => file.parent().map_or_else(current, Path::to_path_buf),
        None => current(),
    }
}

/// Makes every path of the gateway's own machine absolute from `base`. `codex.binary`
/// only when it names a path: a bare name is looked up in `PATH`.
pub(super) fn anchor(config: &mut Config, base: &Path) {
    let from_base = |path: &mut PathBuf| {
        if path.is_relative() {
            *path = base.join(&*path);
        }
    };
    from_base(&mut config.storage.database);
    from_base(&mut config.codex.workspace);
    if config.codex.binary.components().count() > 1 {
        from_base(&mut config.codex.binary);
    }
    let files = [
        config.codex.home.as_mut(),
        config.telegram.token_file.as_mut(),
        config.discord.token_file.as_mut(),
    ];
    files.into_iter().flatten().for_each(from_base);
    for remote in &mut config.codex.remote {
        from_base(&mut remote.token_file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_are_read_from_the_config_files_folder() {
        let mut config = Config::default();
        config.codex.home = Some("codex-home".into());
        config.codex.binary = "bin/codex".into();
        config.telegram.token_file = Some("/run/secrets/telegram".into());
        anchor(&mut config, Path::new("/etc/codex-gateway"));
        assert_eq!(
            config.storage.database,
            Path::new("/etc/codex-gateway/codex-gateway.db")
        );
        assert_eq!(
            config.codex.workspace,
            Path::new("/etc/codex-gateway/workspace")
        );
        assert_eq!(
            config.codex.home.as_deref(),
            Some(Path::new("/etc/codex-gateway/codex-home"))
        );
        assert_eq!(
            config.codex.binary,
            Path::new("/etc/codex-gateway/bin/codex")
        );
        assert_eq!(
            config.telegram.token_file.as_deref(),
            Some(Path::new("/run/secrets/telegram")),
            "absolute stays"
        );
        let mut bare = Config::default();
        anchor(&mut bare, Path::new("/etc/codex-gateway"));
        assert_eq!(
            bare.codex.binary,
            Path::new("codex"),
            "a name is looked up in PATH"
        );
    }

    #[test]
    fn the_base_is_the_files_folder_or_the_current_one() {
        let file = Path::new("/etc/codex-gateway/gateway.toml");
        assert_eq!(base_folder(Some(file)), Path::new("/etc/codex-gateway"));
        assert_eq!(base_folder(None), std::env::current_dir().unwrap());
        let relative = base_folder(Some(Path::new("conf/gateway.toml")));
        assert_eq!(relative, std::env::current_dir().unwrap().join("conf"));
    }
}
