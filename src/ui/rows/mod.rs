//! The views' state: which views there are, and per view the rows it
//! derives from a Frame (built by [`App::rebuild`](super::state::App::rebuild)
//! when data or settings change, never per draw). Drawing them is
//! [`super::views`]' part; nothing here knows about the terminal or the App,
//! so the App can hold these rows without depending on how they are drawn.
//!
//! | view | file |
//! |---|---|
//! | Processes | [`processes`] |
//! | Processes grouped by cgroup (`C`) | [`cgroups`] |
//! | CPUs | [`cpus`] |
//! | Devices/NAPI | [`devices`] |
//! | Topology | [`topology`] |
//! | Pinning | [`pinning`] |
//! | The detail pane over Processes (`Enter`) | [`detail`] |
//!
//! Topology and Pinning are text views: lines made on the data thread
//! (they need I/O), each a [`LineKind`] and its text.

pub mod cgroups;
pub mod cpus;
pub mod detail;
pub mod devices;
pub mod pinning;
pub mod processes;
pub mod robbed;
pub mod topology;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum View {
    Processes,
    Cpus,
    Devices,
    Topology,
    Pinning,
}

impl View {
    pub const ALL: [View; 5] = [
        View::Processes,
        View::Cpus,
        View::Devices,
        View::Topology,
        View::Pinning,
    ];

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn title(self) -> &'static str {
        match self {
            View::Processes => "Processes",
            View::Cpus => "CPUs",
            View::Devices => "Devices/NAPI",
            View::Topology => "Topology",
            View::Pinning => "Pinning",
        }
    }

    /// Whether the body is a table with a header row (vs. plain text lines).
    pub fn has_table_header(self) -> bool {
        matches!(self, View::Processes | View::Cpus | View::Devices)
    }

    /// Text views scroll; list views move a selection.
    pub fn scrolls_only(self) -> bool {
        matches!(self, View::Topology | View::Pinning)
    }
}

/// Text line kinds of the Topology/Pinning views (styled when drawn).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineKind {
    Heading,
    Normal,
    Warn,
    Note,
}
