//! The configuration file end to end: the real binary in a real terminal
//! (tmux) saves its settings with `W`, starts again with them, and starts
//! with one warning line from a broken file.

use crate::common;
use crate::common::tier::Need;

use common::tmux::Tmux;

const BIN: &str = env!("CARGO_BIN_EXE_nettop");

/// The command that runs nettop with its configuration under `dir`.
fn nettop_in(dir: &std::path::Path, args: &str) -> String {
    format!(
        "env XDG_CONFIG_HOME={} {BIN} --no-bpf {args}",
        dir.display()
    )
}

case!(
    w_then_restart_keeps_the_sort_columns_and_view,
    [Need::Tool("tmux", "-V")]
);
fn w_then_restart_keeps_the_sort_columns_and_view() {
    let dir = tempfile::tempdir().unwrap();
    let Some(t) = Tmux::start("cfg-save", &nettop_in(dir.path(), "-d 0.5"), 140, 30) else {
        return common::skip("w_then_restart_keeps_the_sort", "tmux not installed");
    };
    t.wait_text("sort TOP%▼");
    // Sort by STOLEN via the fields screen, hide USER, then save.
    t.keys(&["F"]);
    t.wait_text("fields:");
    // The list starts PID, USER, PRI, NI, S, TOP%, ONCPU%, TRUE%, GAP,
    // STOLEN%.
    t.keys(&["Home", "Down", "Space"]);
    // USER hidden, the cursor is on PRI; STOLEN% is seven lines down.
    t.keys(&["Down"; 7]);
    t.keys(&["Enter"]);
    t.wait_text("sort STOLEN%▼");
    t.keys(&["W"]);
    let file = dir.path().join("nettop/config.toml");
    t.wait_text("settings written to");
    t.keys(&["q"]);
    t.assert_restored(0);
    let saved = std::fs::read_to_string(&file).expect("W wrote no file");
    assert!(saved.contains("sort = \"stolen\""), "{saved}");
    assert!(!saved.contains("\"user\""), "{saved}");
    drop(t);

    let Some(t) = Tmux::start("cfg-load", &nettop_in(dir.path(), "-d 0.5"), 140, 30) else {
        return;
    };
    let s = t.wait_text("sort STOLEN%▼");
    let header = s.lines().find(|l| l.contains("PID ")).unwrap().to_string();
    assert!(!header.contains("USER"), "USER came back:\n{s}");
    assert!(header.contains("STOLEN%▼"), "{s}");
    t.keys(&["q"]);
    t.assert_restored(0);
    drop(t);

    // Flags win over the file; --no-config ignores it.
    let Some(t) = Tmux::start("cfg-none", &nettop_in(dir.path(), "--no-config"), 140, 30) else {
        return;
    };
    t.wait_text("sort TOP%▼");
    t.keys(&["W"]);
    t.wait_text("not saved: --no-config");
    t.keys(&["q"]);
    t.assert_restored(0);
}

case!(
    a_broken_file_starts_with_one_warning_and_the_good_settings,
    [Need::Tool("tmux", "-V")]
);
fn a_broken_file_starts_with_one_warning_and_the_good_settings() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("nettop")).unwrap();
    std::fs::write(
        dir.path().join("nettop/config.toml"),
        "sort = \"net_rx\"\ndelay = \"fast\"\ncolor_scheme = \"neon\"\n",
    )
    .unwrap();
    let Some(t) = Tmux::start("cfg-bad", &nettop_in(dir.path(), ""), 200, 30) else {
        return common::skip(
            "a_broken_file_starts_with_one_warning",
            "tmux not installed",
        );
    };
    let s = t.wait_text("sort NET_RX%▼");
    let warn: Vec<&str> = s.lines().filter(|l| l.contains("config.toml")).collect();
    assert_eq!(warn.len(), 1, "one warning line:\n{s}");
    assert!(
        warn[0].contains("delay") && warn[0].contains("color_scheme"),
        "{s}"
    );
    t.keys(&["q"]);
    t.assert_restored(0);

    // A file that is not TOML at all: still starts, with the defaults.
    std::fs::write(dir.path().join("nettop/config.toml"), "sort = [\n").unwrap();
    drop(t);
    let Some(t) = Tmux::start("cfg-syntax", &nettop_in(dir.path(), ""), 200, 30) else {
        return;
    };
    let s = t.wait_text("sort TOP%▼");
    assert!(s.contains("config.toml: line 1"), "{s}");
    t.keys(&["q"]);
    t.assert_restored(0);
}

case!(
    w_refuses_a_symlink_planted_by_another_user,
    [Need::Root, Need::Tool("tmux", "-V")]
);
/// The planted-symlink attack on `W`: another user owns the configuration
/// directory and points `config.toml` at a file of root's. nettop warns at
/// start (the file is not TOML), and `W` then refuses, naming why; root's
/// file is untouched.
fn w_refuses_a_symlink_planted_by_another_user() {
    if !common::is_root() {
        return common::skip("w_refuses_a_symlink_planted", "not root (chown)");
    }
    let dir = tempfile::tempdir().unwrap();
    let precious = dir.path().join("precious.txt");
    std::fs::write(&precious, "root's own\n").unwrap();
    let theirs = dir.path().join("nettop");
    std::fs::create_dir(&theirs).unwrap();
    let link = theirs.join("config.toml");
    std::os::unix::fs::symlink(&precious, &link).unwrap();
    for p in [&link, &theirs] {
        std::os::unix::fs::lchown(p, Some(65534), Some(65534)).unwrap();
    }
    let Some(t) = Tmux::start("cfg-planted", &nettop_in(dir.path(), ""), 240, 30) else {
        return common::skip("w_refuses_a_symlink_planted", "tmux not installed");
    };
    t.wait_text("using the defaults");
    t.keys(&["W"]);
    let screen = t.wait_text("settings not saved");
    assert!(screen.contains("symbolic link"), "{screen}");
    t.keys(&["q"]);
    t.assert_restored(0);
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "root's own\n");
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());

    // The same with --config naming the symlink itself.
    let cmd = format!("{BIN} --no-bpf --config {}", link.display());
    let Some(t) = Tmux::start("cfg-planted2", &cmd, 240, 30) else {
        return;
    };
    t.wait_text("using the defaults");
    t.keys(&["W"]);
    t.wait_text("settings not saved");
    t.keys(&["q"]);
    t.assert_restored(0);
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "root's own\n");
}
