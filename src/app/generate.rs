//! `nettop --generate man|completions DIR` (hidden): the man page and shell
//! completions, generated from the clap definition so they never drift
//! from `--help`. The packaging step runs it on the binary it packages;
//! build.rs cannot, because the command line uses the crate's own parsers.

use std::path::Path;

use anyhow::{Context, bail};
use clap::CommandFactory;
use clap_complete::Shell;

use crate::app::cli::Cli;

/// Writes what `what` names into `dir` and lists the files on stdout.
pub fn run(what: &str, dir: &Path) -> anyhow::Result<u8> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let written = match what {
        "man" => vec![man_page(dir)?],
        "completions" => completions(dir)?,
        other => bail!("--generate '{other}': expected man or completions"),
    };
    for p in written {
        println!("{}", p.display());
    }
    Ok(0)
}

/// nettop.1.
pub fn man_page(dir: &Path) -> anyhow::Result<std::path::PathBuf> {
    let path = dir.join("nettop.1");
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut out)
        .context("rendering the man page")?;
    std::fs::write(&path, out).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// nettop.bash, _nettop (zsh), nettop.fish.
pub fn completions(dir: &Path) -> anyhow::Result<Vec<std::path::PathBuf>> {
    let mut cmd = Cli::command();
    [Shell::Bash, Shell::Zsh, Shell::Fish]
        .into_iter()
        .map(|sh| {
            clap_complete::generate_to(sh, &mut cmd, "nettop", dir)
                .with_context(|| format!("writing {sh} completions to {}", dir.display()))
        })
        .collect()
}
