//! README's example configuration file is one nettop reads without a
//! warning, and it names every setting `W` writes, so a setting added to
//! the TUI without a word in README, or a value README spells in a way the
//! reader refuses, fails here.

use crate::common;

use nettop::app::config;
use nettop::ui::state::{App, Options};

/// The first ```toml block of README's "Configuration file" section.
fn readme_example() -> String {
    let readme = common::readme::text();
    let section = readme
        .split("### Configuration file\n")
        .nth(1)
        .expect("README has a 'Configuration file' section");
    // Up to the next heading (`##` or `###`; a `#` line may be a comment).
    let section = section.split("\n##").next().unwrap_or(section);
    section
        .split("```toml\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the section has a ```toml example")
        .to_string()
}

/// The settings' names in the file, from what `W` would write: every
/// setting an [`App`] has.
fn setting_names(s: &nettop::ui::settings::Settings) -> Vec<String> {
    let table = toml::Table::try_from(s).expect("settings serialise as a TOML table");
    let mut names: Vec<String> = table.keys().cloned().collect();
    names.sort();
    names
}

#[test]
fn readme_example_config_reads_without_problems() {
    let text = readme_example();
    let (settings, problems) = config::parse(&text);
    assert!(
        problems.is_empty(),
        "README's example configuration: {problems:?}\n{text}"
    );
    let everything = App::new(Options::default()).settings();
    assert_eq!(
        setting_names(&settings),
        setting_names(&everything),
        "README's example should set every setting W writes"
    );
}
