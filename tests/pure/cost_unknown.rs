//! A figure whose denominator nettop knows is incomplete is unknown, not
//! small: when the device counters of other network namespaces could not
//! be read (no CAP_SYS_ADMIN), the host's NET_RX CPU per Gbit/s received
//! would divide the NET_RX time of all traffic by the bytes of part of
//! it. Batch text, the TUI, JSON and the metrics all show it as n/a with
//! the collector's reason, and keep the figures that stay right (NET_RX
//! ns per packet counts napi packets, which BPF sees in every namespace).

use crate::common;

use nettop::metrics::openmetrics::{self, Flavor, Options};
use nettop::model::compute;
use nettop::model::frame::Frame;
use nettop::output::text::{TextOptions, render_frame};
use nettop::record::synth;
use nettop::sample::{DeviceGap, GapCause, RawSample};
use nettop::ui::rows::View;

const WHY: &str = "device counters of 3 other network namespace(s) not read: \
                   entering them needs CAP_SYS_ADMIN";

fn samples(gap: bool) -> (RawSample, RawSample) {
    let prev = synth::sample(1, 8, 2);
    let mut cur = synth::sample(2, 8, 2);
    if gap {
        cur.devices_incomplete = Some(DeviceGap {
            cause: GapCause::NetnsDenied,
            why: WHY.into(),
        });
        cur.notes = vec![WHY.into()];
    }
    (prev, cur)
}

fn frame(gap: bool) -> Frame {
    let (prev, cur) = samples(gap);
    compute(&synth::host(2), &prev, &cur)
}

fn tui_header(f: Frame) -> String {
    let mut app = common::screen::app(200, 30, false);
    app.push_frame(f);
    app.view = View::Devices;
    common::screen::screen(&app, 200, 30)
}

fn metrics(gap: bool) -> String {
    let (prev, cur) = samples(gap);
    let fams = openmetrics::families(&synth::host(2), Some(&prev), &cur, &Options::default());
    openmetrics::render(&fams, Flavor::OpenMetrics)
}

#[test]
fn the_host_figure_per_gbps_is_na_with_its_reason_in_every_front_end() {
    // Complete counters: a number everywhere (the test's control).
    let whole = frame(false);
    assert!(
        whole.summary.net_rx_pct_per_gbps.is_some(),
        "{:?}",
        whole.summary
    );
    assert_eq!(whole.summary.net_rx_pct_per_gbps_unknown, None);
    let text = render_frame(&whole, &TextOptions::default());
    let cost = text.lines().find(|l| l.starts_with("Cost:")).unwrap();
    assert!(!cost.contains("n/a"), "{cost}");
    assert!(!metrics(false).contains("nettop_net_rx_per_byte_unknown"));
    assert!(metrics(false).contains("\nnettop_net_rx_per_byte_seconds "));

    let part = frame(true);
    // Model: unknown with its reason; the per-packet figure stays.
    assert_eq!(part.summary.net_rx_pct_per_gbps, None);
    let gap = part.summary.net_rx_pct_per_gbps_unknown.as_ref().unwrap();
    assert_eq!((gap.cause, gap.why.as_str()), (GapCause::NetnsDenied, WHY));
    assert_eq!(
        part.summary.net_rx_ns_per_packet,
        whole.summary.net_rx_ns_per_packet
    );
    assert!(part.summary.net_rx_ns_per_packet.is_some());

    // Batch text.
    let text = render_frame(&part, &TextOptions::default());
    let cost = text.lines().find(|l| l.starts_with("Cost:")).unwrap();
    assert!(
        cost.contains("ns/pkt, n/a % of a CPU per Gbit/s received")
            && cost.contains(&format!("({WHY})")),
        "{cost}"
    );

    // JSON: null (absent) figure, the reason beside it.
    let json: serde_json::Value =
        serde_json::from_str(&nettop::output::json::render_json(&part, &[]).unwrap()).unwrap();
    let summary = &json["summary"];
    assert!(summary.get("net_rx_pct_per_gbps").is_none(), "{summary}");
    assert_eq!(
        summary["net_rx_pct_per_gbps_unknown"],
        serde_json::json!({"cause": "netns_denied", "why": WHY})
    );
    assert!(summary["net_rx_ns_per_packet"].as_f64().is_some());

    // Metrics: no gauge that reads as a number, and why it is missing.
    let m = metrics(true);
    assert!(!m.contains("\nnettop_net_rx_per_byte_seconds "), "{m}");
    assert!(
        m.contains("\nnettop_net_rx_per_byte_unknown_info{cause=\"netns_denied\"} 1"),
        "{m}"
    );
    assert!(m.contains("\nnettop_net_rx_per_packet_seconds "));

    // TUI: the Devices view's header.
    let screen = tui_header(part);
    assert!(
        screen.contains("Host cost: NET_RX") && screen.contains("n/a % of a CPU per Gbit/s"),
        "{screen}"
    );
    // The whole frame's cost line (the header meters may say n/a of
    // what a synthetic frame lacks: memory, load).
    let screen = tui_header(whole);
    let cost = screen
        .lines()
        .find(|l| l.contains("Host cost: NET_RX"))
        .unwrap_or_else(|| panic!("{screen}"));
    assert!(!cost.contains("n/a"), "{cost}");
}
