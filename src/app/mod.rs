//! The top layer: one runner per mode, and the only code that knows the
//! command line. Each runner wires collector → model → sinks: the TUI,
//! batch text/JSON, recordings, the scrape endpoint, exports, the lint and
//! calibration. [`options`] turns the command line into each layer's own
//! options; nothing below `app` sees [`cli::Cli`].

pub mod batch;
pub mod calibrate;
pub mod cli;
pub mod config;
pub mod docs;
pub mod export;
pub mod generate;
pub mod live;
pub mod logger;
pub mod options;
pub mod pinning_check;
pub mod plan;
pub mod sampling;
pub mod service;
pub mod tui;

use cli::Cli;

/// Picks the mode. Returns the process exit code (0 ok, 1 lint findings);
/// errors exit 2 with a one-line reason.
pub fn run(cli: &Cli) -> anyhow::Result<u8> {
    cli.check().map_err(anyhow::Error::msg)?;
    if let [what, dir] = cli.generate.as_slice() {
        return generate::run(what, std::path::Path::new(dir));
    }
    if cli.pinning_check {
        return pinning_check::run(cli);
    }
    if cli.plan || cli.revert.is_some() {
        return plan::run(cli);
    }
    if cli.calibrate {
        return calibrate::run(cli);
    }
    if cli.serve.is_some() {
        return service::run(cli);
    }
    if let Some(file) = &cli.replay {
        if let Some(fmt) = cli.export {
            return export::run(cli, file, fmt);
        }
        if cli.batch {
            return batch::run_replay(cli, file);
        }
        return tui::run_replay(cli, file);
    }
    if cli.record.is_some() {
        return service::run(cli);
    }
    if cli.batch {
        return batch::run_live(cli);
    }
    tui::run_live(cli)
}
