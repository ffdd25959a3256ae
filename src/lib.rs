//! nettop: top that tells the truth on busy network hosts.
//!
//! Data flows one way: collectors produce [`model::raw::RawSample`]s (raw,
//! cumulative counters), the model turns two of them into a
//! [`model::frame::Frame`], and every front end (TUI, batch text, JSON,
//! recordings, metrics) renders Frames. Rendering does no I/O; collectors do
//! no formatting.

pub mod bytes;
pub mod calibrate;
pub mod cgroup;
pub mod cli;
pub mod collector;
pub mod cpuset;
pub mod export;
pub mod generate;
pub mod model;
pub mod output;
pub mod pinning;
pub mod record;
pub mod rtnl;
pub mod safefile;
pub mod sanitize;
pub mod service;
pub mod signals;
pub mod sysroot;
pub mod ticker;
pub mod topology;
pub mod ui;
pub mod units;
pub mod users;
pub mod version;

use cli::Cli;

/// Picks the mode. Returns the process exit code (0 ok, 1 lint findings);
/// errors exit 2 with a one-line reason.
pub fn run(cli: &Cli) -> anyhow::Result<u8> {
    cli.check().map_err(anyhow::Error::msg)?;
    if let [what, dir] = cli.generate.as_slice() {
        return generate::run(what, std::path::Path::new(dir));
    }
    if cli.pinning_check {
        return pinning::run_check(cli);
    }
    if cli.calibrate {
        return calibrate::run_cli(cli);
    }
    if cli.serve.is_some() {
        return service::run(cli);
    }
    if let Some(file) = &cli.replay {
        if let Some(fmt) = cli.export {
            return export::export_recording(cli, file, fmt);
        }
        if cli.batch {
            return output::batch::run_replay(cli, file);
        }
        return ui::run_replay(cli, file);
    }
    if cli.record.is_some() {
        return service::run(cli);
    }
    if cli.batch {
        return output::batch::run_live(cli);
    }
    ui::run_live(cli)
}
