//! CSV rows of `--export csv`: one line per task and frame, for a
//! spreadsheet or pandas. Frames are computed from consecutive raw samples
//! at export time, exactly as replay and live modes do, so every front end
//! agrees.

use crate::model::frame::{Frame, TaskView};
use crate::sample::SOFTIRQ_NAMES;

/// CSV header of [`csv_rows`].
pub const CSV_HEADER: &str = "unix_ms,seq,interval_s,pid,tid,comm,state,last_cpu,top_pct,on_cpu_pct,true_pct,stolen_pct,hardirq_pct,sysvec_pct,softirq_stolen_net_rx_pct,softirq_stolen_pct,inline_pct,ksoftirqd_pct,hidden_pct,interruptions_per_s,softirqs_per_s,priority,nice,cpu_time_s,virt_bytes,res_bytes,shr_bytes,mem_pct,caused_pct,rx_bytes_per_s,tx_bytes_per_s,rx_pkts_per_s,tx_pkts_per_s,true_pct_low,true_pct_high,hidden_pct_low,hidden_pct_high";

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Task rows of one frame as CSV lines, most stolen time first, at most
/// `rows` (0 = all). Pure.
pub fn csv_rows(f: &Frame, threads: bool, rows: usize) -> String {
    let mut v: Vec<&TaskView> = if threads {
        f.threads.iter().collect()
    } else {
        f.processes.iter().collect()
    };
    v.sort_by(|a, b| {
        b.stolen_pct
            .total_cmp(&a.stolen_pct)
            .then(b.top_pct.total_cmp(&a.top_pct))
            .then((a.pid, a.tid).cmp(&(b.pid, b.tid)))
    });
    if rows > 0 {
        v.truncate(rows);
    }
    let net_rx = SOFTIRQ_NAMES
        .iter()
        .position(|n| *n == "NET_RX")
        .unwrap_or(3);
    // An unknown figure (older recordings, a kernel thread's memory) is
    // an empty field, never 0.
    fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
        v.map_or(String::new(), |v| v.to_string())
    }
    let mut out = String::new();
    for t in v {
        let soft: f64 = t.softirq_stolen_pct.iter().sum();
        let tr = t.traffic.as_ref();
        out.push_str(&format!(
            "{},{},{:.3},{},{},{},{},{},{:.2},{:.2},{:.2},{:.2},{:.2},{:.2},{:.2},{:.2},{:.2},{:.2},{:.2},{:.1},{:.1},{},{},{:.2},{},{},{},{},{},{},{},{},{},{:.2},{:.2},{:.2},{:.2}\n",
            f.unix_ms,
            f.seq,
            f.interval_s,
            t.pid,
            t.tid,
            csv_field(&t.comm),
            csv_field(&t.state.to_string()),
            t.last_cpu,
            t.top_pct,
            t.on_cpu_pct,
            t.true_pct,
            t.stolen_pct,
            t.hardirq_pct,
            t.sysvec_pct,
            t.softirq_stolen_pct[net_rx],
            soft,
            t.inline_pct,
            t.ksoftirqd_pct,
            t.hidden_pct,
            t.interruptions_per_s,
            t.softirqs_per_s,
            opt(t.priority),
            opt(t.nice),
            t.cpu_time_s,
            opt(t.virt_bytes),
            opt(t.res_bytes),
            opt(t.shr_bytes),
            opt(t.mem_pct.map(|p| format!("{p:.2}"))),
            opt(tr.map(|x| format!("{:.2}", x.caused_pct))),
            opt(tr.map(|x| format!("{:.0}", x.rx_bytes_per_s))),
            opt(tr.map(|x| format!("{:.0}", x.tx_bytes_per_s))),
            opt(tr.map(|x| format!("{:.1}", x.rx_pkts_per_s))),
            opt(tr.map(|x| format!("{:.1}", x.tx_pkts_per_s))),
            t.true_pct_low,
            t.true_pct_high,
            t.hidden_pct_low,
            t.hidden_pct_high,
        ));
    }
    out
}
