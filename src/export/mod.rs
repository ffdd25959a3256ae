//! Exporters: recordings to JSON/CSV/OpenMetrics, and `--serve` for Prometheus.
use std::path::Path;

use crate::cli::{Cli, ExportFormat};

pub fn serve(_cli: &Cli, _addr: &str) -> anyhow::Result<u8> {
    anyhow::bail!("--serve is not built yet")
}

pub fn export_recording(_cli: &Cli, _file: &Path, _fmt: ExportFormat) -> anyhow::Result<u8> {
    anyhow::bail!("--export is not built yet")
}
