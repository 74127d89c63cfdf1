//! Every chart: its title and axis labels are in the SVG, the same data gives
//! the same bytes, and nothing to draw is an error, not a panic. With
//! `PLOTS_DUMP=DIR` the SVGs are also written to DIR for looking at.

use plots::*;

#[allow(
    clippy::disallowed_methods,
    reason = "the test, not the crate, writes the charts it drew for a person to look at"
)]
fn dump(name: &str, svg: &str) {
    if let Some(dir) = std::env::var_os("PLOTS_DUMP") {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(std::path::Path::new(&dir).join(name), svg).unwrap();
    }
}

fn scaling_chart() -> ScalingChart {
    let line = |label: &str, f: fn(f64) -> f64| Series {
        label: label.into(),
        points: [1.0, 2.0, 4.0, 8.0, 16.0, 24.0, 32.0, 48.0, 64.0]
            .iter()
            .map(|&x| (x, f(x)))
            .collect(),
    };
    ScalingChart {
        title: "Scaling of the counter".into(),
        x_label: "running CPUs (count)".into(),
        y_label: "throughput (iterations per second)".into(),
        series: vec![
            line("base", |x| 1.5e8 / x),
            line("padded", |x| 2.0e8 / x.sqrt()),
        ],
        boundaries: vec![
            Boundary {
                x: 32.5,
                kind: BoundaryKind::Socket,
            },
            Boundary {
                x: 16.5,
                kind: BoundaryKind::L3Domain,
            },
            Boundary {
                x: 48.5,
                kind: BoundaryKind::L3Domain,
            },
        ],
    }
}

fn comparison_chart() -> ComparisonChart {
    ComparisonChart {
        title: "Change against base".into(),
        value_label: "throughput change against base (%)".into(),
        category_label: "variant".into(),
        bars: vec![
            Bar {
                label: "base".into(),
                value: 0.0,
            },
            Bar {
                label: "padded".into(),
                value: 42.5,
            },
            Bar {
                label: "a-much-longer-variant-name".into(),
                value: -12.25,
            },
        ],
    }
}

fn attribution_chart() -> AttributionChart {
    AttributionChart {
        title: "Per-field attribution".into(),
        variants: vec!["base".into(), "padded".into()],
        rows: vec![
            FieldRow {
                field: "ctr.value".into(),
                hitm: vec![1.0, 0.2],
                stall_cycles: vec![900.0, 120.0],
            },
            FieldRow {
                field: "ctr.other".into(),
                hitm: vec![0.8, 0.0],
                stall_cycles: vec![700.0, 10.0],
            },
            FieldRow {
                field: "lock.locked_pending".into(),
                hitm: vec![0.1, 0.1],
                stall_cycles: vec![50.0, 55.0],
            },
        ],
        hitm_label: "HITM per iteration (count)".into(),
        stall_label: "stall cycles per iteration (cycles)".into(),
    }
}

fn line_map_chart() -> LineMapChart {
    let f = |name: &str, offset, size, traffic| MapField {
        name: name.into(),
        offset,
        size,
        traffic,
    };
    LineMapChart {
        title:
            "struct sock, variant a-long-variant-name (machine=icelake-sp-2s,cpus=44,params.step=2)"
                .into(),
        size: 160,
        line_bytes: 64,
        fields: vec![
            f("flags", 0, 4, 0.0),
            f("refcnt", 8, 8, 3.5),
            f("a_long_field_name_that_does_not_fit", 16, 2, 1.0),
            f("spans_two_lines", 56, 16, 0.5),
            f("stats", 72, 48, 2.0),
            f("tail", 128, 8, 0.1),
            f(
                "an_even_longer_field_name_in_the_key_table_of_the_map",
                136,
                8,
                0.0,
            ),
        ],
        traffic_label: "stores + atomics + misses per iteration (count)".into(),
        traffic_max: 0.0,
        subtitle: String::new(),
    }
}

#[test]
fn every_chart_has_its_title_and_axis_labels_and_is_deterministic() {
    let s = scaling_chart();
    let svg = scaling(&s).unwrap();
    dump("scaling.svg", &svg);
    for text in [
        s.title.as_str(),
        &s.x_label,
        &s.y_label,
        "base",
        "padded",
        "socket boundary",
        "L3 domain boundary",
    ] {
        assert!(svg.contains(text), "scaling lacks {text}");
    }
    assert_eq!(svg, scaling(&s).unwrap());

    let c = comparison_chart();
    let svg = comparison(&c).unwrap();
    dump("comparison.svg", &svg);
    for text in [
        c.title.as_str(),
        &c.value_label,
        &c.category_label,
        "+42.5%",
        "-12.2%",
        "\n0.0%\n",
    ] {
        assert!(svg.contains(text), "comparison lacks {text}");
    }
    assert_eq!(svg, comparison(&c).unwrap());

    let a = attribution_chart();
    let svg = attribution(&a).unwrap();
    dump("attribution.svg", &svg);
    for text in [
        a.title.as_str(),
        &a.hitm_label,
        &a.stall_label,
        "field",
        "ctr.value",
        "padded",
    ] {
        assert!(svg.contains(text), "attribution lacks {text}");
    }
    assert_eq!(svg, attribution(&a).unwrap());

    let m = line_map_chart();
    let svg = line_map(&m).unwrap();
    dump("lines.svg", &svg);
    for text in [
        m.title.as_str(),
        &m.traffic_label,
        "byte offset",
        "line 2",
        "refcnt",
        "hole (padding)",
    ] {
        assert!(svg.contains(text), "line map lacks {text}");
    }
    assert_eq!(svg, line_map(&m).unwrap());
}

#[test]
fn nothing_to_draw_is_an_error() {
    let mut s = scaling_chart();
    s.series[1].points.clear();
    assert!(matches!(scaling(&s), Err(PlotError::Empty(_))));
    s.series.clear();
    assert!(matches!(scaling(&s), Err(PlotError::Empty(_))));

    let mut c = comparison_chart();
    c.bars.clear();
    assert!(matches!(comparison(&c), Err(PlotError::Empty(_))));

    let mut a = attribution_chart();
    a.rows.clear();
    assert!(matches!(attribution(&a), Err(PlotError::Empty(_))));

    let mut m = line_map_chart();
    m.fields.clear();
    assert!(matches!(line_map(&m), Err(PlotError::Empty(_))));
}

#[test]
fn a_run_without_hitm_draws_no_hitm_panel_and_says_so() {
    let mut a = attribution_chart();
    for r in &mut a.rows {
        r.hitm.iter_mut().for_each(|v| *v = 0.0);
    }
    let svg = attribution(&a).unwrap();
    dump("attribution-no-hitm.svg", &svg);
    assert!(svg.contains("No HITM transfers in this run"), "{svg}");
    assert!(
        !svg.contains("HITM (misses served"),
        "an empty HITM panel is drawn"
    );
    assert!(!svg.contains(&a.hitm_label), "an empty HITM axis is drawn");
    assert!(svg.contains(&a.stall_label));
    // Nothing at all to draw: no chart.
    for r in &mut a.rows {
        r.stall_cycles.iter_mut().for_each(|v| *v = 0.0);
    }
    assert!(matches!(attribution(&a), Err(PlotError::Empty(_))));
}

#[test]
fn bad_values_are_errors() {
    let mut s = scaling_chart();
    s.series[0].points[0].1 = f64::NAN;
    assert!(matches!(scaling(&s), Err(PlotError::Invalid(_))));

    let mut a = attribution_chart();
    a.rows[0].hitm.pop();
    assert!(matches!(attribution(&a), Err(PlotError::Invalid(_))));

    let mut m = line_map_chart();
    m.fields[0].offset = 200;
    assert!(matches!(line_map(&m), Err(PlotError::Invalid(_))));
}

#[test]
fn one_series_and_single_points_draw() {
    let s = ScalingChart {
        series: vec![Series {
            label: "only".into(),
            points: vec![(4.0, 0.0)],
        }],
        boundaries: vec![],
        ..scaling_chart()
    };
    let svg = scaling(&s).unwrap();
    assert!(!svg.contains("only"), "no legend for one series");
    let c = ComparisonChart {
        bars: vec![Bar {
            label: "base".into(),
            value: 0.0,
        }],
        ..comparison_chart()
    };
    comparison(&c).unwrap();
}

fn validation_chart() -> ValidationChart {
    let p = |machine: &str, class: &str, measured, simulated| ValidationPoint {
        machine: machine.into(),
        class: class.into(),
        measured,
        simulated,
        known_miss: false,
        role: PointRole::Prediction,
    };
    ValidationChart {
        title: "Simulated against measured".into(),
        x_label: "measured one-way latency (ns)".into(),
        y_label: "simulated one-way latency (ns)".into(),
        band_pct: 10.0,
        points: vec![
            p("icelake", "SMT siblings", 8.0, 7.7),
            p("icelake", "cross-socket", 108.0, 105.0),
            p("milan", "cross-socket", 304.0, 197.0),
        ],
    }
}

/// Both validation charts of one fixture, each checked for every part a
/// reader needs (machines, classes, band, misses, roles): one fixture, so
/// one test.
#[test]
fn validation_charts_name_machines_classes_and_the_band() {
    let v = validation_chart();
    let svg = validation_scatter(&v).unwrap();
    dump("validation-scatter.svg", &svg);
    for text in [
        v.title.as_str(),
        &v.x_label,
        &v.y_label,
        "icelake",
        "milan",
        "simulated = measured",
        "±10 % band",
    ] {
        assert!(svg.contains(text), "scatter lacks {text}");
    }
    // One point per class, in its machine's colour; the point outside the
    // band (milan, -35.2 %) ringed and labelled, one ring in the legend.
    assert_eq!(
        svg.matches("<circle").count(),
        3 + 2 + 1 + 1 + 1,
        "3 points, 2 machines and the prediction marker in the legend, a ring and its swatch"
    );
    assert!(svg.contains("prediction (held out from the fit)"));
    assert!(!svg.contains("calibration"), "no calibration point drawn");
    assert!(svg.contains("-35.2 %, prediction"), "the miss's role");
    assert!(svg.contains("milan: cross-socket"), "no label for the miss");
    assert!(svg.contains("-35.2 %"), "no error for the miss");
    assert!(svg.contains("outside ±10 %"), "no legend for the ring");
    assert!(!svg.contains("known miss"), "no known miss was drawn");
    assert_eq!(svg, validation_scatter(&v).unwrap());

    // A panel per machine: a bar per class, red outside the band, amber
    // for a known miss, the figures with one decimal.
    let svg = validation_bars(&v).unwrap();
    dump("validation-classes.svg", &svg);
    for text in [
        "icelake",
        "milan",
        "SMT siblings",
        "cross-socket",
        "-3.7 %  7.7 / 8.0 ns",
        "-35.2 %  197.0 / 304.0 ns",
        "outside ±10 %",
    ] {
        assert!(svg.contains(text), "bars lack {text}");
    }
    assert!(!svg.contains("known miss"), "a key entry for nothing drawn");
    assert!(svg.contains("fill=\"#C81E1E\""), "the miss is not red");
    let mut known = validation_chart();
    known.points[2].known_miss = true;
    let svg = validation_bars(&known).unwrap();
    assert!(
        svg.contains("fill=\"#E68C00\""),
        "the known miss is not amber"
    );
    assert!(svg.contains("outside, a documented known miss"));
    assert!(!svg.contains("fill=\"#C81E1E\""), "a known miss drawn red");
    // Two machines side by side: wider than tall.
    let size = |svg: &str, key: &str| -> u32 {
        let at = svg.find(&format!("{key}=\"")).unwrap() + key.len() + 2;
        svg[at..].split('"').next().unwrap().parse().unwrap()
    };
    assert!(
        size(&svg, "width") > size(&svg, "height"),
        "not a slide's shape"
    );

    // A class the preset was fitted on is a square, on both charts, and
    // says so in the legend and the key.
    let mut fitted = validation_chart();
    fitted.points[0].role = PointRole::Calibration;
    let scatter = validation_scatter(&fitted).unwrap();
    assert_eq!(scatter.matches("<circle").count(), 2 + 2 + 1 + 1 + 1);
    assert!(scatter.contains("calibration (the preset was fitted on it)"));
    assert_eq!(
        scatter.matches("<rect").count(),
        validation_scatter(&v).unwrap().matches("<rect").count() + 2,
        "a square for the point and one in the legend"
    );
    let bars = validation_bars(&fitted).unwrap();
    assert!(bars.contains("calibration (the preset was fitted on it)"));
    assert!(bars.contains("prediction (held out from the fit)"));
    // A user's own matrix: a triangle, its role not known.
    let mut own = validation_chart();
    for p in &mut own.points {
        p.role = PointRole::Unknown;
    }
    let scatter = validation_scatter(&own).unwrap();
    assert!(scatter.contains("role not known (your own matrix)"));
    assert!(!scatter.contains("prediction"), "no prediction drawn");
    assert_eq!(
        scatter.matches("<polygon").count(),
        3 + 1 + 1,
        "3 points, a swatch, the band"
    );

    let mut empty = validation_chart();
    empty.points.clear();
    assert!(matches!(
        validation_scatter(&empty),
        Err(PlotError::Empty(_))
    ));
    let mut zero = validation_chart();
    zero.points[0].measured = 0.0;
    assert!(matches!(validation_bars(&zero), Err(PlotError::Invalid(_))));
}

#[test]
fn the_line_map_shows_the_struct_size_and_its_tail_padding() {
    // Fields end at 144; sizeof is 160: 16 bytes of tail padding, and the
    // holes at 4..8, 18..56 and 120..128.
    let m = line_map_chart();
    let svg = line_map(&m).unwrap();
    assert!(
        svg.contains(
            "struct size 160 bytes (sizeof): 94 in fields, 50 in holes, 16 of tail padding"
        ),
        "{svg}"
    );
    assert!(svg.contains("tail 16 B"));
    assert!(svg.contains("tail padding (to sizeof)"));
    // Without tail padding there is no tail box.
    let tight = LineMapChart {
        size: 144,
        ..line_map_chart()
    };
    let svg = line_map(&tight).unwrap();
    assert!(svg.contains("0 of tail padding"));
    assert!(!svg.contains("tail 16 B"));
}

fn timeline_chart() -> TimelineChart {
    let m = |from, to, send_cycle, arrive_cycle, kind, label: &str| Message {
        from,
        to,
        send_cycle,
        arrive_cycle,
        kind,
        label: label.into(),
    };
    TimelineChart {
        title: "Messages of a store".into(),
        subtitle: "the first 1 of 9 transactions".into(),
        lanes: vec![
            "CPU 0 (core 0)".into(),
            "CPU 40 (core 40)".into(),
            "home directory node 0".into(),
        ],
        transactions: vec![Transaction {
            caption: "CPU 40 store x.v (line 0): I->M".into(),
            messages: vec![
                m(1, 2, 0, 125, MessageKind::Request, "GetM"),
                m(2, 0, 125, 250, MessageKind::Forward, "Fwd-GetM M->I"),
                m(0, 1, 250, 480, MessageKind::Data, "Data (M)"),
            ],
            load: None,
        }],
    }
}

#[test]
fn the_timeline_draws_lanes_messages_and_cycles() {
    let t = timeline_chart();
    let svg = timeline(&t).unwrap();
    dump("timeline.svg", &svg);
    for text in [
        t.title.as_str(),
        &t.subtitle,
        "CPU 40 (core 40)",
        "home directory node 0",
        "CPU 40 store x.v (line 0): I-&gt;M",
        "Fwd-GetM M-&gt;I",
        "125 → 250",
        "request",
        "forward",
        "data",
    ] {
        assert!(svg.contains(text), "timeline lacks {text}");
    }
    // The legend has only the kinds drawn.
    for absent in ["invalidate", "acknowledgement"] {
        assert!(!svg.contains(absent), "the legend shows {absent}");
    }
    assert_eq!(svg, timeline(&t).unwrap());

    let mut bad = timeline_chart();
    bad.transactions[0].messages[0].to = 3;
    assert!(matches!(timeline(&bad), Err(PlotError::Invalid(_))));
    let mut bad = timeline_chart();
    bad.transactions[0].messages[0].arrive_cycle = 0;
    bad.transactions[0].messages[0].send_cycle = 5;
    assert!(matches!(timeline(&bad), Err(PlotError::Invalid(_))));
    let mut empty = timeline_chart();
    empty.transactions.clear();
    assert!(matches!(timeline(&empty), Err(PlotError::Empty(_))));
}

#[test]
fn a_doubling_sweep_takes_a_log2_x_axis_and_values_over_decades_a_log_y() {
    let mut c = scaling_chart();
    // 1 to 64 CPUs: log2; 1.5e8/64^2 to 2e8: four decades, log y.
    for (x, y) in &mut c.series[0].points {
        *y = 1.5e8 / (*x * *x);
    }
    let svg = scaling(&c).unwrap();
    dump("scaling-log.svg", &svg);
    assert!(svg.contains("running CPUs (count), log2 scale"), "{svg}");
    assert!(svg.contains("throughput (iterations per second), log scale"));
    // Ticks at the powers of two, labelled as CPU counts.
    for tick in [">\n1\n<", ">\n2\n<", ">\n4\n<", ">\n32\n<", ">\n64\n<"] {
        assert!(svg.contains(tick), "no tick {tick:?}");
    }
    // An axis of thousands to millions (a critical section's cycles) is
    // no CPU count: decade ticks with their 2s and 5s, not 4.1k, 8.19k.
    let cycles = ScalingChart {
        series: vec![Series {
            label: "base".into(),
            points: vec![
                (3400.0, 10.0),
                (34000.0, 12.0),
                (340000.0, 15.0),
                (1.7e6, 18.0),
            ],
        }],
        boundaries: Vec::new(),
        x_label: "params.cs_cycles".into(),
        ..scaling_chart()
    };
    let svg = scaling(&cycles).unwrap();
    dump("scaling-log10-x.svg", &svg);
    assert!(svg.contains("params.cs_cycles, log scale"), "{svg}");
    for tick in [">\n10k\n<", ">\n20k\n<", ">\n50k\n<", ">\n1M\n<"] {
        assert!(svg.contains(tick), "no tick {tick:?}");
    }
    assert!(!svg.contains(">\n8.19k\n<"), "{svg}");
    // A sweep over 4 to 16 CPUs and values within a factor of 2: linear.
    let narrow = ScalingChart {
        series: vec![Series {
            label: "base".into(),
            points: vec![(4.0, 10.0), (8.0, 12.0), (12.0, 15.0), (16.0, 18.0)],
        }],
        boundaries: Vec::new(),
        ..scaling_chart()
    };
    let svg = scaling(&narrow).unwrap();
    assert!(!svg.contains("log"), "{svg}");
    // The title is centred on the whole figure.
    let width: f64 = svg
        .split("width=\"")
        .nth(1)
        .and_then(|w| w.split('"').next())
        .unwrap()
        .parse()
        .unwrap();
    let title_at = svg.find(">\nScaling of the counter\n<").unwrap();
    let tag = &svg[svg[..title_at].rfind("<text").unwrap()..title_at];
    assert!(tag.contains(&format!("x=\"{}\"", width / 2.0)), "{tag}");
    assert!(tag.contains("text-anchor=\"middle\""), "{tag}");
}

#[test]
fn validation_panels_are_as_tall_as_their_classes() {
    // One machine of eight classes and five of one: the short panels
    // stack beside the tall one instead of each grid row being as tall
    // as the tallest panel (which left empty rows).
    let mut points = Vec::new();
    for (machine, classes) in [("a", 8), ("b", 1), ("c", 1), ("d", 1), ("e", 1), ("f", 1)] {
        for k in 0..classes {
            points.push(ValidationPoint {
                machine: machine.into(),
                class: format!("class {k}"),
                measured: 100.0,
                simulated: 101.0,
                known_miss: false,
                role: PointRole::Prediction,
            });
        }
    }
    let chart = ValidationChart {
        title: "t".into(),
        x_label: "x".into(),
        y_label: "y".into(),
        band_pct: 10.0,
        points,
    };
    let svg = validation_bars(&chart).unwrap();
    let height: u32 = {
        let at = svg.find("height=\"").unwrap() + 8;
        svg[at..].split('"').next().unwrap().parse().unwrap()
    };
    // Title 50, the tallest panel (64 + 8 rows of 22 + 34; b and e, c and
    // f stack to 2 x 120 beside it), one key line; a grid of rows would
    // be two panels of 8 rows tall.
    assert_eq!(height, 50 + (64 + 8 * 22 + 34) + 40);
    // The rounding to zero leaves no sign on a bar's figures.
    assert!(svg.contains("+1.0 %  101.0 / 100.0 ns"), "{svg}");
    let mut zero = chart.clone();
    zero.points[0].simulated = 99.97;
    let svg = validation_bars(&zero).unwrap();
    assert!(svg.contains("0.0 %  100.0 / 100.0 ns"), "{svg}");
    assert!(!svg.contains("-0.0 %"), "{svg}");
}

#[test]
fn percentages_near_100_keep_their_digits() {
    assert_eq!(signed_percent(-99.99), "-99.99");
    assert_eq!(signed_percent(-99.997), "-99.997");
    assert_eq!(signed_percent(-100.0), "-100.0");
    assert_eq!(signed_percent(99.96), "+99.96");
    assert_eq!(signed_percent(-21.63), "-21.6");
    // Rounding to zero leaves no sign: `-0.0` would read as a drop.
    assert_eq!(signed_percent(-0.04), "0.0");
    assert_eq!(signed_percent(0.049), "0.0");
    assert_eq!(signed_percent(-0.06), "-0.1");
    let chart = ComparisonChart {
        bars: vec![Bar {
            label: "spinlock".into(),
            value: -99.99,
        }],
        ..comparison_chart()
    };
    let svg = comparison(&chart).unwrap();
    assert!(svg.contains("-99.99%"), "{svg}");
    assert!(!svg.contains("-100.0%"));
}

#[test]
fn grouped_comparison_draws_a_group_per_case() {
    let chart = GroupedComparisonChart {
        title: "per case".into(),
        value_label: "throughput change against the same case's base (%)".into(),
        category_label: "case".into(),
        categories: vec!["cpus=1".into(), "cpus=2".into()],
        series: vec![
            ("atomic".into(), vec![-21.6, -71.6]),
            ("spinlock".into(), vec![-32.6, -99.99]),
        ],
    };
    let svg = grouped_comparison(&chart).unwrap();
    dump("grouped-comparison.svg", &svg);
    for s in [
        "cpus=1", "cpus=2", "atomic", "spinlock", "-71.6%", "-99.99%",
    ] {
        assert!(svg.contains(s), "lacks {s}");
    }
    let bad = GroupedComparisonChart {
        series: vec![("atomic".into(), vec![1.0])],
        ..chart
    };
    assert_eq!(
        grouped_comparison(&bad),
        Err(PlotError::Invalid(
            "series `atomic` has not one value per group".into()
        ))
    );
}

#[test]
fn line_maps_share_a_scale_and_name_only_what_they_draw() {
    let mut m = line_map_chart();
    // Every field hot, no hole, no tail: no swatch but the scale.
    m.fields = vec![MapField {
        name: "value".into(),
        offset: 0,
        size: 8,
        traffic: 1.0,
    }];
    m.size = 8;
    let svg = line_map(&m).unwrap();
    for absent in ["hole (padding)", "tail padding (to sizeof)", ">\nnone\n<"] {
        assert!(!svg.contains(absent), "draws a swatch for {absent}");
    }
    // Each field's offset inside its box.
    assert!(svg.contains(">\n+0\n<"));
    // Alone, 1.0 is the top of the scale; beside a variant with 4.0, a
    // quarter of it.
    assert!(svg.contains(">\n1\n<"));
    let shared = LineMapChart {
        traffic_max: 4.0,
        ..m.clone()
    };
    let svg_shared = line_map(&shared).unwrap();
    assert!(svg_shared.contains(">\n4\n<"), "{svg_shared}");
    assert_ne!(svg, svg_shared, "the field's colour does not change");
    // The full chart has holes and tail padding, and a field without
    // traffic: each swatch is drawn.
    let svg = line_map(&line_map_chart()).unwrap();
    for present in ["hole (padding)", "tail padding (to sizeof)", ">\nnone\n<"] {
        assert!(svg.contains(present), "no swatch for {present}");
    }
    assert!(!svg.contains("no scale"));
    // No traffic in any field or variant: no 0-to-0 scale, the key says so.
    let mut idle = line_map_chart();
    for f in &mut idle.fields {
        f.traffic = 0.0;
    }
    let svg = line_map(&idle).unwrap();
    assert!(svg.contains("0 in every field (and every variant): no scale"));
    // The scale's hottest step, rgb(190, 20, 30), is not drawn.
    assert!(!svg.contains("#BE141E"), "the scale is still drawn");
}

fn c2c_chart() -> C2cChart {
    let offset = |label: &str, local, remote, loads, stores, atomics| C2cOffset {
        label: label.into(),
        hitm_local: local,
        hitm_remote: remote,
        loads,
        stores,
        atomics,
    };
    C2cChart {
        title: "counter: shared lines".into(),
        unit: "per iteration".into(),
        lines: vec![
            C2cLine {
                heading: "packed: line 0 at 0x0 (home node 0)".into(),
                touched_by: "touched by 16 CPUs (0-15) on nodes 0,1".into(),
                offsets: vec![
                    offset("0x0 stats.limit", 0.21, 0.27, 1.0, 0.0, 0.0),
                    offset("0x8 stats.requests", 0.22, 0.3, 0.0, 0.0, 1.0),
                ],
            },
            C2cLine {
                heading: "split: line 1 at 0x40 (home node 0)".into(),
                touched_by: "touched by 16 CPUs (0-15) on nodes 0,1".into(),
                offsets: vec![offset("0x0 stats.requests", 0.48, 0.52, 0.0, 0.0, 1.0)],
            },
        ],
    }
}

#[test]
fn the_c2c_chart_draws_each_offset_on_one_scale_and_keys_what_it_draws() {
    let c = c2c_chart();
    let svg = c2c_lines(&c).unwrap();
    dump("c2c.svg", &svg);
    for text in [
        "counter: shared lines",
        "packed: line 0 at 0x0 (home node 0)",
        "touched by 16 CPUs (0-15) on nodes 0,1",
        "0x8 stats.requests",
        "HITM per iteration (local + remote)",
        "accesses per iteration (loads + stores + atomics)",
        "0.21 + 0.27",
        "1 + 0 + 0",
        "HITM, remote node",
        "atomics",
    ] {
        assert!(svg.contains(text), "c2c lacks {text}");
    }
    // No store anywhere: no swatch for stores.
    assert!(!svg.contains("stores\n"), "a key entry for nothing drawn");
    // One scale: the split line's HITM bar (1.0 per iteration) is the
    // longest, about twice the packed offsets' (0.48, 0.52).
    let widths: Vec<i32> = svg
        .split("<rect")
        .skip(1)
        .filter(|r| r.contains("fill=\"#AA1414\"") || r.contains("fill=\"#F08C28\""))
        .map(|r| {
            let at = r.find("width=\"").unwrap() + 7;
            r[at..].split('"').next().unwrap().parse().unwrap()
        })
        .collect();
    assert_eq!(
        widths.len(),
        2 + 6,
        "two key swatches, two segments per offset"
    );
    let bar = |k: usize| widths[2 + 2 * k] + widths[3 + 2 * k];
    assert_eq!(bar(2), 300, "the largest HITM fills the column");
    assert!(
        (bar(0) - 144).abs() <= 2 && (bar(1) - 156).abs() <= 2,
        "{widths:?}"
    );
    assert_eq!(svg, c2c_lines(&c).unwrap());

    let mut empty = c2c_chart();
    empty.lines.clear();
    assert!(matches!(c2c_lines(&empty), Err(PlotError::Empty(_))));
    let mut bad = c2c_chart();
    bad.lines[0].offsets[0].loads = -1.0;
    assert_eq!(
        c2c_lines(&bad).unwrap_err().to_string(),
        "cannot draw: a count of `0x0 stats.limit` is negative"
    );
}

#[test]
fn a_panel_whose_every_value_is_zero_says_so_and_small_axes_keep_distinct_ticks() {
    let mut a = attribution_chart();
    for row in &mut a.rows {
        row.hitm = vec![0.0, 0.0];
    }
    let svg = attribution(&a).unwrap();
    assert_eq!(
        svg.matches("0 for every field in every variant").count(),
        1,
        "only the all-zero HITM panel says so"
    );
    assert!(!attribution(&attribution_chart())
        .unwrap()
        .contains("0 for every field in every variant"));

    // Ticks a tenth of a 0.05 span apart: each its own label, where two
    // decimals printed 0.005 and 0.01 alike.
    let labels: Vec<String> = (0..=10)
        .map(|t| axis_number(t as f64 * 0.005, 0.05))
        .collect();
    let mut distinct = labels.clone();
    distinct.dedup();
    assert_eq!(distinct, labels, "{labels:?}");
    assert_eq!(labels[1], "0.005");
    assert_eq!(labels[2], "0.01");
    assert_eq!(axis_number(200.0, 1000.0), short_number(200.0));
    assert_eq!(axis_number(-0.0001, 0.05), "0");
    // A label of a value under a hundredth keeps two significant digits
    // (a line map's colour scale printed 0 at both ends).
    assert_eq!(short_number(0.00187), "0.0019");
    assert_eq!(short_number(0.001), "0.001");
    assert_eq!(short_number(-0.0042), "-0.0042");
    assert_eq!(short_number(0.0), "0");
    assert_eq!(short_number(0.25), "0.25");
}

/// The x of each `<rect>` of colour `fill` in `svg`, with its width.
fn rects_of(svg: &str, fill: &str) -> Vec<(i64, i64)> {
    let number = |tag: &str, key: &str| -> i64 {
        let start = tag.find(&format!(" {key}=\"")).unwrap() + key.len() + 3;
        tag[start..].split('"').next().unwrap().parse().unwrap()
    };
    svg.lines()
        .filter(|l| l.starts_with("<rect") && l.contains(&format!("fill=\"{fill}\"")))
        .map(|l| (number(l, "x"), number(l, "width")))
        .collect()
}

/// A -0.8 % bar beside a +180 % one: each side of the value axis leaves the
/// room its written value needs, about the text's width (a fixed 22 % of the
/// span on each side left about 100 px empty left of `-0.8%`).
#[test]
fn the_comparison_axis_pads_each_side_by_what_its_labels_need() {
    let chart = ComparisonChart {
        bars: vec![
            Bar {
                label: "slightly-slower".into(),
                value: -0.8,
            },
            Bar {
                label: "much-faster".into(),
                value: 180.0,
            },
        ],
        ..comparison_chart()
    };
    let svg = comparison(&chart).unwrap();
    dump("comparison-mixed-signs.svg", &svg);
    // The plot's left edge: the y axis line; its right edge: the x axis's end.
    let axis = x_axis_ends(&svg);
    let bars = rects_of(&svg, "#1F77B4");
    assert_eq!(bars.len(), 2, "{svg}");
    let (negative_x, _) = bars[0];
    let (positive_x, positive_w) = bars[1];
    // "-0.8%" is 5 characters of about 8.4 px, 12 px of gaps: about 54 px.
    let left_room = negative_x - axis.0;
    assert!(
        (45..=70).contains(&left_room),
        "left room {left_room} px: {svg}"
    );
    // "+180.0%": about 71 px.
    let right_room = axis.1 - (positive_x + positive_w);
    assert!(
        (60..=90).contains(&right_room),
        "right room {right_room} px: {svg}"
    );
}

/// A change of -0.6 % alone draws as a short bar: the value axis spans at
/// least `MIN_CHANGE_SPAN_PERCENT` points (it spanned -0.7 to 0, and the
/// bar filled the plot as a change of -60 % would); the labels keep their
/// room on the widened axis.
#[test]
fn a_small_change_draws_a_short_bar() {
    // Each bar's x and width, and the x axis's two ends.
    let drawn = |values: &[f64]| {
        let chart = ComparisonChart {
            bars: values
                .iter()
                .enumerate()
                .map(|(i, &value)| Bar {
                    label: format!("variant-{i}"),
                    value,
                })
                .collect(),
            ..comparison_chart()
        };
        let svg = comparison(&chart).unwrap();
        let axis = x_axis_ends(&svg);
        (rects_of(&svg, "#1F77B4"), axis, svg)
    };
    let (bars, (left, right), svg) = drawn(&[-0.6, 0.0]);
    // The -0.6 % bar (and the 0.0 % one, of no width).
    assert_eq!(bars.len(), 2, "{svg}");
    let (x, w) = bars[0];
    assert!(
        w * 5 < right - left,
        "a -0.6 % bar {w} px of {}: {svg}",
        right - left
    );
    // `0.0%`, written right of zero, still fits: about 46 px.
    assert!(
        right - (x + w) >= 40,
        "{} px for 0.0%: {svg}",
        right - (x + w)
    );
    // A large change still fills most of the plot.
    let (bars, (left, right), _) = drawn(&[-60.0]);
    assert!(bars[0].1 * 10 > (right - left) * 7, "{bars:?}");
    // And a small positive one grows to the right the same way.
    let (bars, (left, right), _) = drawn(&[1.3]);
    assert!(bars[0].1 * 3 < right - left, "{bars:?}");
}

/// The x axis's two ends in a comparison chart: its one horizontal line
/// across the plot (a `points` line of two points, over 300 px long).
fn x_axis_ends(svg: &str) -> (i64, i64) {
    svg.lines()
        .find_map(|l| {
            let points = l.split("points=\"").nth(1)?.split('"').next()?;
            let ends: Vec<(i64, i64)> = points
                .split_whitespace()
                .map(|p| {
                    let (x, y) = p.split_once(',').unwrap();
                    (x.parse().unwrap(), y.parse().unwrap())
                })
                .collect();
            (ends.len() == 2 && ends[0].1 == ends[1].1 && ends[1].0 - ends[0].0 > 300)
                .then(|| (ends[0].0, ends[1].0))
        })
        .expect("a comparison chart has an x axis")
}

/// The SVG's height in pixels (its root element's `height`).
fn svg_height(svg: &str) -> u32 {
    let at = svg.find("height=\"").unwrap() + 8;
    svg[at..].split('"').next().unwrap().parse().unwrap()
}

/// An attribution chart's height is bounded by its rows: the title and
/// the note take at most 80 px, each panel 110 px of title and axes and at
/// most 500 px of bars, or 5 px a bar where it has more than a hundred.
/// At the shipped SCTP case's size (10 variants, 12 fields, every field
/// drawn in both panels) that is 1 500 px; the chart was 5 022 px tall
/// there when every half bar was 9 px, and is 1 230 px now. Every bar is
/// still drawn: each a `<rect>` of its own.
#[test]
fn an_attribution_chart_stays_within_a_height_per_row() {
    for (variants, fields) in [(10, 12), (2, 3), (1, 16), (4, 16), (12, 16), (12, 1)] {
        let chart = AttributionChart {
            title: format!("{variants} variants, {fields} fields"),
            variants: (0..variants).map(|v| format!("variant-{v}")).collect(),
            rows: (0..fields)
                .map(|f| FieldRow {
                    field: format!("struct_{f}.field_{f}"),
                    // Values of one order of magnitude: no field is left
                    // out as too small to see.
                    hitm: (0..variants).map(|v| 1.0 + (v + f) as f64 % 5.0).collect(),
                    stall_cycles: (0..variants)
                        .map(|v| 100.0 + ((3 * v + f) % 7) as f64 * 20.0)
                        .collect(),
                })
                .collect(),
            hitm_label: "HITM per iteration (count)".into(),
            stall_label: "stall cycles per iteration (cycles)".into(),
        };
        let svg = attribution(&chart).unwrap();
        let bars = variants * fields;
        let bound = 80 + 2 * (110 + (5 * bars).max(500));
        let height = svg_height(&svg);
        assert!(
            height <= bound as u32,
            "{variants} variants x {fields} fields: {height} px tall, more than {bound}"
        );
        assert!(
            svg.matches("<rect").count() >= 2 * bars,
            "{variants} variants x {fields} fields: fewer rectangles than the {} bars",
            2 * bars
        );
        if (variants, fields) == (10, 12) {
            dump("attribution-sctp-size.svg", &svg);
            assert_eq!(bound, 1_500);
        }
    }
}
