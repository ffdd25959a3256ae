//! README's "TUI keys" table is the help overlay, word for word: the keys
//! of each line (as the overlay names them) and what they do, in the same
//! order. Both come from one keymap (src/ui/keymap.rs), which is also what
//! handles the keys, so README cannot describe a key the TUI does not have.

use crate::common;

use nettop::ui::keymap;

/// (keys, action) rows of README's keys table; a key cell's code spans
/// lose their backticks (`` `Tab` `Shift-Tab` `` reads "Tab Shift-Tab").
fn readme_keys() -> Vec<(String, String)> {
    common::readme::table_rows(&common::readme::text(), "### TUI keys", "| key | action |")
        .into_iter()
        .map(|(k, a)| (k.replace('`', ""), a))
        .collect()
}

/// The table README should have, for the failure message.
fn as_markdown(rows: &[(String, &str)]) -> String {
    let mut s = String::from("| key | action |\n|---|---|\n");
    for (keys, action) in rows {
        let keys = if keys == "mouse" {
            keys.clone()
        } else {
            keys.split(' ')
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        s.push_str(&format!("| {keys} | {action} |\n"));
    }
    s
}

#[test]
fn readme_keys_table_is_the_help_overlay() {
    let help = keymap::help();
    let want: Vec<(String, String)> = help
        .iter()
        .map(|(k, a)| (k.clone(), a.to_string()))
        .collect();
    let readme = readme_keys();
    assert!(readme.len() >= 10, "README keys table: {readme:?}");
    assert!(
        readme == want,
        "README's TUI keys table differs from the keymap; it should read:\n\n{}",
        as_markdown(&help)
    );
}
