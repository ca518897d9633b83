//! The kubelet's `/metrics/resource`: its resource metrics collector's
//! families in the Prometheus text format (0.0.4) as client_golang writes
//! a registry — families sorted by name, samples by label values, labels by
//! name, `# HELP` carrying component-base's stability level, values as Go's
//! `strconv.FormatFloat(v, 'g', -1, 64)`, and millisecond timestamps on the
//! samples the collector stamps (all but `container_start_time_seconds`
//! and `resource_scrape_error`). The collector reads the CPU and memory
//! summary ([`super::stats`]); the deprecated `scrape_error` (since 1.29)
//! is hidden in 1.32 and so absent.

use std::fmt::Write as _;

use super::stats::NodeUsage;

/// The content type client_golang negotiates for a scraper asking for
/// text (or nothing), with prometheus/common's default name escaping.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8; escaping=values";

/// One sample: label pairs (by name), value, timestamp in milliseconds.
type Sample = (Vec<(&'static str, String)>, f64, Option<i64>);

struct Family {
    name: &'static str,
    help: &'static str,
    kind: &'static str,
    samples: Vec<Sample>,
}

fn family(name: &'static str, help: &'static str, kind: &'static str) -> Family {
    Family {
        name,
        help,
        kind,
        samples: Vec::new(),
    }
}

/// `v` as Go's `strconv.FormatFloat(v, 'g', -1, 64)`: the shortest digits
/// that read back as `v`, in `%e` form (an exponent of two digits at least)
/// when the decimal exponent is below -4 or, as `'g'` decides for the
/// shortest form, 6 or more.
pub fn go_float(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.into();
    }
    // Rust's `{:e}` gives the same shortest round-trip digits.
    let sci = format!("{:e}", v.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if v < 0.0 { "-" } else { "" };
    if !(-4..6).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{frac}e{esign}{:02}", exp.abs());
    }
    let point = exp + 1;
    let n = digits.len() as i32;
    let body = if point <= 0 {
        format!("0.{}{digits}", "0".repeat((-point) as usize))
    } else if point >= n {
        format!("{digits}{}", "0".repeat((point - n) as usize))
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{int}.{frac}")
    };
    format!("{sign}{body}")
}

fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('\n', "\\n")
        .replace('"', "\\\"")
}

fn seconds(nanos: u64) -> f64 {
    nanos as f64 / 1e9
}

/// Renders the resource metrics of `u`.
pub fn render(u: &NodeUsage) -> String {
    let stamp = Some(u.now.as_millisecond());
    let mut start = family(
        "container_start_time_seconds",
        "[STABLE] Start time of the container since unix epoch in seconds",
        "gauge",
    );
    let mut c_cpu = family(
        "container_cpu_usage_seconds_total",
        "[STABLE] Cumulative cpu time consumed by the container in core-seconds",
        "counter",
    );
    let mut c_mem = family(
        "container_memory_working_set_bytes",
        "[STABLE] Current working set of the container in bytes",
        "gauge",
    );
    let mut c_swap = family(
        "container_swap_usage_bytes",
        "[ALPHA] Current amount of the container swap usage in bytes. Reported only on non-windows systems",
        "gauge",
    );
    let mut p_cpu = family(
        "pod_cpu_usage_seconds_total",
        "[STABLE] Cumulative cpu time consumed by the pod in core-seconds",
        "counter",
    );
    let mut p_mem = family(
        "pod_memory_working_set_bytes",
        "[STABLE] Current working set of the pod in bytes",
        "gauge",
    );
    let mut p_swap = family(
        "pod_swap_usage_bytes",
        "[ALPHA] Current amount of the pod swap usage in bytes. Reported only on non-windows systems",
        "gauge",
    );
    for p in &u.pods {
        for c in &p.containers {
            let labels = vec![
                ("container", c.name.clone()),
                ("namespace", p.namespace.clone()),
                ("pod", p.name.clone()),
            ];
            let started = c.start.as_nanosecond() as f64 / 1e9;
            start.samples.push((labels.clone(), started, None));
            c_cpu
                .samples
                .push((labels.clone(), seconds(c.cpu.core_nanos), stamp));
            c_mem
                .samples
                .push((labels.clone(), c.memory.working_set as f64, stamp));
            c_swap.samples.push((labels, 0.0, stamp));
        }
        let labels = vec![("namespace", p.namespace.clone()), ("pod", p.name.clone())];
        p_cpu
            .samples
            .push((labels.clone(), seconds(p.cpu.core_nanos), stamp));
        p_mem
            .samples
            .push((labels.clone(), p.memory.working_set as f64, stamp));
        p_swap.samples.push((labels, 0.0, stamp));
    }
    let mut n_cpu = family(
        "node_cpu_usage_seconds_total",
        "[STABLE] Cumulative cpu time consumed by the node in core-seconds",
        "counter",
    );
    n_cpu
        .samples
        .push((Vec::new(), seconds(u.cpu.core_nanos), stamp));
    let mut n_mem = family(
        "node_memory_working_set_bytes",
        "[STABLE] Current working set of the node in bytes",
        "gauge",
    );
    n_mem
        .samples
        .push((Vec::new(), u.memory.working_set as f64, stamp));
    let mut n_swap = family(
        "node_swap_usage_bytes",
        "[ALPHA] Current swap usage of the node in bytes. Reported only on non-windows systems",
        "gauge",
    );
    n_swap.samples.push((Vec::new(), 0.0, stamp));
    let mut scrape = family(
        "resource_scrape_error",
        "[STABLE] 1 if there was an error while getting container metrics, 0 otherwise",
        "gauge",
    );
    scrape.samples.push((Vec::new(), 0.0, None));

    let mut families = vec![
        start, c_cpu, c_mem, c_swap, p_cpu, p_mem, p_swap, n_cpu, n_mem, n_swap, scrape,
    ];
    families.retain(|f| !f.samples.is_empty());
    families.sort_by_key(|f| f.name);
    let mut out = String::new();
    for mut f in families {
        f.samples.sort_by(|a, b| {
            let values = |s: &Sample| s.0.iter().map(|(_, v)| v.clone()).collect::<Vec<_>>();
            values(a).cmp(&values(b))
        });
        let _ = writeln!(out, "# HELP {} {}", f.name, f.help);
        let _ = writeln!(out, "# TYPE {} {}", f.name, f.kind);
        for (labels, value, ts) in &f.samples {
            out.push_str(f.name);
            if !labels.is_empty() {
                let pairs: Vec<String> = labels
                    .iter()
                    .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
                    .collect();
                let _ = write!(out, "{{{}}}", pairs.join(","));
            }
            let _ = write!(out, " {}", go_float(*value));
            if let Some(ts) = ts {
                let _ = write!(out, " {ts}");
            }
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_as_go_formats_them() {
        for (v, want) in [
            (0.0, "0"),
            (1.0, "1"),
            (12.5, "12.5"),
            (100.0, "100"),
            (123456.0, "123456"),
            (1234567.0, "1.234567e+06"),
            (1e6, "1e+06"),
            (33554432.0, "3.3554432e+07"),
            (1735689600.0, "1.7356896e+09"),
            (0.0001234, "0.0001234"),
            (0.00001, "1e-05"),
            (-2.5, "-2.5"),
            (1.2e21, "1.2e+21"),
        ] {
            assert_eq!(go_float(v), want, "{v}");
        }
    }
}
