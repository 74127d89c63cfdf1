//! SVG charts of plain data: scaling lines, comparison bars, plain bars,
//! per-field attribution bars, cache-line maps of a struct, the per-line
//! view of shared lines (`perf c2c` style), and a machine's topology as
//! nested boxes.
//!
//! This crate knows nothing of the simulator: it takes the structs below and
//! returns SVG documents as strings. It uses plotters' SVG backend without any
//! font feature, so text is written as SVG `<text>` elements laid out with
//! plotters' fixed width estimate: no font file (system or embedded) is read,
//! and the same data gives the same bytes on every machine.
//!
//! Every chart has a title and axis labels (callers give the units), and a
//! legend when it has more than one series. Data without anything to draw
//! (no series, no points, no bars, no fields) and non-finite numbers are a
//! [`PlotError`], never a panic.

use std::fmt;

mod bars;
mod c2c;
mod targets;
mod timeline;
mod validation;
pub use bars::{bars, BarChart};
pub use c2c::{c2c_lines, C2cChart, C2cLine, C2cOffset};
pub use targets::{targets, TargetRow, TargetsChart};
pub use timeline::{timeline, LoadSpan, Message, MessageKind, TimelineChart, Transaction};
pub use validation::{
    validation_bars, validation_scatter, PointRole, ValidationChart, ValidationPoint,
};
mod topology;
pub use topology::{topology, L3Box, NodeBox, SocketBox, TopologyChart};

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Why a chart could not be drawn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlotError {
    /// Nothing to draw: the named part of the data is empty.
    Empty(String),
    /// A value cannot be drawn (not finite, or a size of zero).
    Invalid(String),
    /// plotters failed (should not happen with the string backend).
    Draw(String),
}

impl fmt::Display for PlotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlotError::Empty(what) => write!(f, "nothing to draw: {what} is empty"),
            PlotError::Invalid(what) => write!(f, "cannot draw: {what}"),
            PlotError::Draw(what) => write!(f, "drawing failed: {what}"),
        }
    }
}

impl std::error::Error for PlotError {}

fn draw_err<E: std::fmt::Debug>(e: E) -> PlotError {
    PlotError::Draw(format!("{e:?}"))
}

/// One line of a scaling chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub label: String,
    /// (x, y) points; drawn in x order.
    pub points: Vec<(f64, f64)>,
}

/// What a vertical marker line of a scaling chart stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoundaryKind {
    Socket,
    L3Domain,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Boundary {
    pub x: f64,
    pub kind: BoundaryKind,
}

/// A metric against CPU count (or any x), one line per series, with
/// vertical lines at socket and L3-domain boundaries.
#[derive(Clone, Debug, PartialEq)]
pub struct ScalingChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    pub boundaries: Vec<Boundary>,
}

/// A labelled bar.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    pub label: String,
    pub value: f64,
}

/// Each variant's percent change against the base, as horizontal bars with
/// the value written at the end of each.
#[derive(Clone, Debug, PartialEq)]
pub struct ComparisonChart {
    pub title: String,
    /// The value axis, e.g. "throughput change against base (%)".
    pub value_label: String,
    /// The category axis, e.g. "variant".
    pub category_label: String,
    pub bars: Vec<Bar>,
}

/// Per case (a group), each variant's percent change against that case's
/// base, as horizontal bars, a colour per variant, the value written at the
/// end of each: the comparison of a sweep, one group per case.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupedComparisonChart {
    pub title: String,
    pub value_label: String,
    /// The group axis, e.g. "case".
    pub category_label: String,
    /// The groups, top to bottom.
    pub categories: Vec<String>,
    /// (variant, one value per group).
    pub series: Vec<(String, Vec<f64>)>,
}

/// One field's values in an attribution chart, one per variant.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldRow {
    pub field: String,
    /// HITM count per variant, in the chart's variant order.
    pub hitm: Vec<f64>,
    /// Stall cycles per variant, in the chart's variant order.
    pub stall_cycles: Vec<f64>,
}

/// Per field, HITM and stall cycles side by side across variants (two
/// panels, one per metric, each with a bar per variant for each field with
/// a value in it, the bars thinner as they grow in number; a panel that
/// would be 0 in every bar is left out, and the chart says so under its
/// title).
#[derive(Clone, Debug, PartialEq)]
pub struct AttributionChart {
    pub title: String,
    pub variants: Vec<String>,
    pub rows: Vec<FieldRow>,
    /// Axis label of the HITM panel, with its unit.
    pub hitm_label: String,
    /// Axis label of the stall panel, with its unit.
    pub stall_label: String,
}

/// A field of a struct for a cache-line map.
#[derive(Clone, Debug, PartialEq)]
pub struct MapField {
    pub name: String,
    pub offset: u32,
    pub size: u32,
    /// Traffic the field caused (its colour); any non-negative scale.
    pub traffic: f64,
}

/// A struct's bytes drawn 64 to a row, each field a box at its offset,
/// holes visible, fields coloured by traffic.
#[derive(Clone, Debug, PartialEq)]
pub struct LineMapChart {
    pub title: String,
    /// Bytes to draw: the struct's size (`sizeof`, tail padding included)
    /// when known, else the end of its last field. Bytes after the last
    /// field are drawn as tail padding.
    pub size: u32,
    /// Bytes per row (the cache line), usually 64.
    pub line_bytes: u32,
    pub fields: Vec<MapField>,
    /// What `traffic` counts, with its unit, for the colour key.
    pub traffic_label: String,
    /// The top of the colour scale. Maps of one struct in several variants
    /// share it (the largest traffic of any of them), so that a layout
    /// with less traffic looks cooler, not equally hot; 0 for this map's
    /// own largest.
    pub traffic_max: f64,
    /// The line under the title; empty for the struct's size in fields,
    /// holes and tail padding.
    pub subtitle: String,
}

const PALETTE: [RGBColor; 12] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(0, 0, 128),
    RGBColor(128, 0, 0),
];

fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

const FONT: &str = "sans-serif";

/// Width of `text` at `size` px, as a generous estimate of a sans-serif
/// font (wider than plotters' own, so that what fits here fits on screen).
fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.6
}

/// The width of the widest of `texts` at `size` px, and at least
/// `at_least` px: a column or label area as wide as its longest entry.
fn widest<'a>(texts: impl IntoIterator<Item = &'a str>, size: f64, at_least: f64) -> f64 {
    texts
        .into_iter()
        .map(|t| text_width(t, size))
        .fold(at_least, f64::max)
}

/// `text` split at spaces into lines of at most `max_width` px at `size` px
/// (a word longer than that is a line of its own).
fn wrap(text: &str, size: f64, max_width: f64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let candidate = if line.is_empty() {
            word.to_string()
        } else {
            format!("{line} {word}")
        };
        if text_width(&candidate, size) > max_width && !line.is_empty() {
            lines.push(std::mem::take(&mut line));
            line = word.to_string();
        } else {
            line = candidate;
        }
    }
    lines.push(line);
    lines
}

/// The width a title at 22 px needs, with a margin each side.
fn title_width(title: &str) -> u32 {
    text_width(title, 22.0) as u32 + 60
}

/// A number for a label: short, with k/M/G for large magnitudes.
pub fn short_number(v: f64) -> String {
    let a = v.abs();
    let (scaled, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let s = if scaled == scaled.trunc() || scaled.abs() >= 100.0 {
        format!("{scaled:.0}")
    } else if scaled.abs() >= 10.0 {
        format!("{scaled:.1}")
    } else if scaled.abs() >= 0.01 {
        format!("{scaled:.2}")
    } else {
        // Below a hundredth two decimals would print 0 for a value that is
        // not (a line map's top of scale of 0.002 misses per iteration):
        // two significant digits instead.
        let decimals = (-scaled.abs().log10()).ceil() as usize + 1;
        format!("{scaled:.decimals$}")
    };
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    format!("{s}{suffix}")
}

/// A value axis's tick label: [`short_number`], or for an axis spanning
/// less than 10 as many decimals as its ticks (about a tenth of the span)
/// need, so that neighbouring ticks never print the same label.
pub fn axis_number(v: f64, span: f64) -> String {
    if span >= 10.0 || span <= 0.0 || span.is_nan() {
        return short_number(v);
    }
    let decimals = (-(span / 10.0).log10()).ceil().clamp(0.0, 9.0) as usize;
    let s = format!("{v:.decimals$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" {
        "0".to_string()
    } else {
        s
    }
}

fn check_finite(what: &str, v: f64) -> Result<(), PlotError> {
    if v.is_finite() {
        Ok(())
    } else {
        Err(PlotError::Invalid(format!("{what} is {v}")))
    }
}

fn render(
    width: u32,
    height: u32,
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), PlotError>,
) -> Result<String, PlotError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        draw(&root)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

/// A linear f64 axis whose ticks are plotters' own, or the given ones (the
/// powers of the base on an axis in log units).
struct Ticked {
    inner: plotters::coord::types::RangedCoordf64,
    ticks: Option<Vec<f64>>,
}

impl Ticked {
    fn new(range: std::ops::Range<f64>, ticks: Option<Vec<f64>>) -> Ticked {
        Ticked {
            inner: range.into(),
            ticks,
        }
    }
}

impl plotters::coord::ranged1d::Ranged for Ticked {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;
    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }
    fn key_points<Hint: plotters::coord::ranged1d::KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        match &self.ticks {
            // No light mesh lines between given ticks.
            Some(ticks) if !hint.weight().allow_light_points() => ticks.clone(),
            Some(_) => Vec::new(),
            None => self.inner.key_points(hint),
        }
    }
    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }
}

/// How one axis of a scaling chart maps values to positions.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Scale {
    Linear,
    /// log base 2: a doubling sweep's points evenly spaced.
    Log2,
    /// log base 10: values that span decades.
    Log10,
}

impl Scale {
    fn to_axis(self, v: f64) -> f64 {
        match self {
            Scale::Linear => v,
            Scale::Log2 => v.log2(),
            Scale::Log10 => v.log10(),
        }
    }
    fn value_at(self, a: f64) -> f64 {
        match self {
            Scale::Linear => a,
            Scale::Log2 => a.exp2(),
            Scale::Log10 => 10f64.powf(a),
        }
    }
    /// What the axis label says of the scale.
    fn note(self) -> &'static str {
        match self {
            Scale::Linear => "",
            Scale::Log2 => ", log2 scale",
            Scale::Log10 => ", log scale",
        }
    }
}

/// Smallest ratio of largest to smallest x for which a scaling chart's x
/// axis is log2: a sweep over 1 to 8 CPUs or more, whose doubling steps
/// would otherwise crowd its first points into the left edge.
pub const LOG_X_MIN_RATIO: f64 = 8.0;
/// Largest x of a log x axis ticked at powers of two: the CPU counts of
/// the largest presets (512 on bergamo-2s) and twice that. An axis past it
/// (a critical section's cycles, a batch of thousands) is ticked at
/// decades with their 2s and 5s.
pub const LOG2_X_MAX: f64 = 1024.0;
/// Smallest ratio of largest to smallest y for a log y axis: values that
/// span two decades, whose small ones a linear axis flattens onto zero.
pub const LOG_Y_MIN_RATIO: f64 = 100.0;

/// The scale of an axis over `values`: `log` when every value is positive
/// and they span at least `min_ratio`.
fn choose_scale(values: &[f64], min_ratio: f64, log: Scale) -> Scale {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if lo > 0.0 && hi / lo >= min_ratio {
        log
    } else {
        Scale::Linear
    }
}

/// Tick positions (in axis units) of a log axis over `lo..hi` (axis units):
/// every power of the base, and for log10 axes spanning few decades the 2s
/// and 5s between them.
fn log_ticks(scale: Scale, lo: f64, hi: f64) -> Vec<f64> {
    let mut ticks = Vec::new();
    let first = lo.ceil() as i64;
    let last = hi.floor() as i64;
    let decades = last - first;
    for p in (first - 1)..=last {
        ticks.push(p as f64);
        if scale == Scale::Log10 && decades <= 3 {
            ticks.push(p as f64 + 2f64.log10());
            ticks.push(p as f64 + 5f64.log10());
        }
    }
    ticks.retain(|t| *t >= lo && *t <= hi);
    ticks
}

/// The scaling chart as an SVG document. The x axis is log2 when x spans a
/// factor of [`LOG_X_MIN_RATIO`] or more (a doubling sweep), the y axis
/// log10 when y spans [`LOG_Y_MIN_RATIO`] or more; the axis labels say so.
pub fn scaling(chart: &ScalingChart) -> Result<String, PlotError> {
    let points = scaling_points(chart)?;
    let xs: Vec<f64> = points.iter().map(|p| p.0).collect();
    let ys: Vec<f64> = points.iter().map(|p| p.1).collect();
    // Doubling steps (CPU counts) take log2 ticks; values past
    // LOG2_X_MAX are no CPU counts, and decade ticks (5k, 10k, 20k) read
    // better than powers of two (4.1k, 8.19k, 16.4k).
    let x_log = if xs.iter().any(|&x| x > LOG2_X_MAX) {
        Scale::Log10
    } else {
        Scale::Log2
    };
    let x_scale = choose_scale(&xs, LOG_X_MIN_RATIO, x_log);
    let y_scale = choose_scale(&ys, LOG_Y_MIN_RATIO, Scale::Log10);
    let at = |(x, y): (f64, f64)| (x_scale.to_axis(x), y_scale.to_axis(y));
    let axis_points: Vec<(f64, f64)> = points.iter().map(|&p| at(p)).collect();
    let ((x0, x1), (y0, y1)) = scaling_ranges(&axis_points, x_scale, y_scale);
    let boundaries: Vec<(f64, BoundaryKind)> = chart
        .boundaries
        .iter()
        .filter(|b| x_scale == Scale::Linear || b.x > 0.0)
        .map(|b| (x_scale.to_axis(b.x), b.kind))
        .filter(|(x, _)| *x > x0 && *x < x1)
        .collect();
    // The legend: one entry per series, then one per kind of boundary,
    // drawn by hand to the right of the plot so it never covers a line.
    let entries = scaling_legend_entries(chart, &boundaries);
    let legend_w = if entries.is_empty() {
        0
    } else {
        widest(entries.iter().map(|e| e.0.as_str()), 13.0, 0.0) as u32 + 60
    };
    let plot_w = 820;
    let width = (plot_w + legend_w).max(title_width(&chart.title));
    let plot_w = width - legend_w;
    let height = 560.max(120 + 20 * entries.len() as u32);
    let x_desc = format!("{}{}", chart.x_label, x_scale.note());
    let y_desc = format!("{}{}", chart.y_label, y_scale.note());
    let x_ticks = match x_scale {
        Scale::Linear => None,
        s => Some(log_ticks(s, x0, x1)),
    };
    let y_ticks = match y_scale {
        Scale::Linear => None,
        s => Some(log_ticks(s, y0, y1)),
    };
    render(width, height, |root| {
        // The title centred on the whole figure, legend included.
        root.draw(&Text::new(
            chart.title.as_str(),
            (width as i32 / 2, 28),
            TextStyle::from((FONT, 22).into_font())
                .color(&BLACK)
                .pos(Pos::new(HPos::Center, VPos::Center)),
        ))
        .map_err(draw_err)?;
        let (_, body) = root.split_vertically(50);
        let (plot, legend) = body.split_horizontally(plot_w);
        let mut c = ChartBuilder::on(&plot)
            .margin(20)
            .margin_top(0)
            .x_label_area_size(55)
            .y_label_area_size(85)
            .build_cartesian_2d(
                Ticked::new(x0..x1, x_ticks.clone()),
                Ticked::new(y0..y1, y_ticks.clone()),
            )
            .map_err(draw_err)?;
        c.configure_mesh()
            .x_desc(x_desc.as_str())
            .y_desc(y_desc.as_str())
            .axis_desc_style((FONT, 16))
            .label_style((FONT, 13))
            .x_label_formatter(&|v| short_number(x_scale.value_at(*v)))
            .y_label_formatter(&|v| short_number(y_scale.value_at(*v)))
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(draw_err)?;
        for (x, kind) in &boundaries {
            let dash = if *kind == BoundaryKind::Socket { 8 } else { 3 };
            c.draw_series(DashedLineSeries::new(
                vec![(*x, y0), (*x, y1)],
                dash,
                4,
                boundary_style(*kind),
            ))
            .map_err(draw_err)?;
        }
        for (i, s) in chart.series.iter().enumerate() {
            let col = color(i);
            let mut pts: Vec<(f64, f64)> = s.points.iter().map(|&p| at(p)).collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            c.draw_series(
                pts.iter()
                    .map(|&p| Circle::new(p, 3, ShapeStyle::from(&col).filled())),
            )
            .map_err(draw_err)?;
            c.draw_series(LineSeries::new(pts, col.stroke_width(2)))
                .map_err(draw_err)?;
        }
        draw_line_legend(&legend, &entries)
    })
}

/// Every point of every series, once each is checked to be finite (and
/// the boundaries too); an error for no series or an empty one.
fn scaling_points(chart: &ScalingChart) -> Result<Vec<(f64, f64)>, PlotError> {
    if chart.series.is_empty() {
        return Err(PlotError::Empty("the list of series".into()));
    }
    let mut points = Vec::new();
    for s in &chart.series {
        if s.points.is_empty() {
            return Err(PlotError::Empty(format!("series `{}`", s.label)));
        }
        for &(x, y) in &s.points {
            check_finite(&format!("a point of `{}`", s.label), x)?;
            check_finite(&format!("a point of `{}`", s.label), y)?;
            points.push((x, y));
        }
    }
    for b in &chart.boundaries {
        check_finite("a boundary", b.x)?;
    }
    Ok(points)
}

/// The plotted x and y ranges, in axis units, around the points: padded
/// on x, with headroom on y (a linear y axis starts at zero).
fn scaling_ranges(
    axis_points: &[(f64, f64)],
    x_scale: Scale,
    y_scale: Scale,
) -> ((f64, f64), (f64, f64)) {
    let xmin = axis_points
        .iter()
        .map(|p| p.0)
        .fold(f64::INFINITY, f64::min);
    let xmax = axis_points
        .iter()
        .map(|p| p.0)
        .fold(f64::NEG_INFINITY, f64::max);
    let (ymin, ymax) = match y_scale {
        // A linear axis starts at zero.
        Scale::Linear => (
            axis_points.iter().map(|p| p.1).fold(0.0, f64::min),
            axis_points.iter().map(|p| p.1).fold(0.0, f64::max),
        ),
        _ => (
            axis_points
                .iter()
                .map(|p| p.1)
                .fold(f64::INFINITY, f64::min),
            axis_points
                .iter()
                .map(|p| p.1)
                .fold(f64::NEG_INFINITY, f64::max),
        ),
    };
    let xpad = match x_scale {
        Scale::Linear => ((xmax - xmin) * 0.04).max(0.5),
        _ => ((xmax - xmin) * 0.04).max(0.1),
    };
    let (x0, x1) = (xmin - xpad, xmax + xpad);
    let yspan = if ymax > ymin { ymax - ymin } else { 1.0 };
    // Headroom above the lines (and below them on a log axis).
    let (y0, y1) = match y_scale {
        Scale::Linear => (ymin, ymax + yspan * 0.05),
        _ => (ymin - yspan * 0.05, ymax + yspan * 0.05),
    };
    ((x0, x1), (y0, y1))
}

/// The scaling chart's legend entries: a label, the line's style and
/// whether it is dashed; none for a single series without boundaries.
fn scaling_legend_entries(
    chart: &ScalingChart,
    boundaries: &[(f64, BoundaryKind)],
) -> Vec<(String, ShapeStyle, bool)> {
    let mut entries: Vec<(String, ShapeStyle, bool)> = Vec::new();
    if chart.series.len() > 1 || !boundaries.is_empty() {
        for (i, s) in chart.series.iter().enumerate() {
            entries.push((s.label.clone(), color(i).stroke_width(2), false));
        }
        for (kind, name) in [
            (BoundaryKind::Socket, "socket boundary"),
            (BoundaryKind::L3Domain, "first L3 domain boundary"),
        ] {
            if boundaries.iter().any(|b| b.1 == kind) {
                entries.push((name.to_string(), boundary_style(kind), true));
            }
        }
    }
    entries
}

/// A legend of lines (solid, or dashed for a boundary), one per row.
fn draw_line_legend(
    legend: &DrawingArea<SVGBackend<'_>, Shift>,
    entries: &[(String, ShapeStyle, bool)],
) -> Result<(), PlotError> {
    let style = TextStyle::from((FONT, 13).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (i, (label, line, dashed)) in entries.iter().enumerate() {
        let y = 20 + 20 * i as i32;
        if *dashed {
            legend
                .draw(&PathElement::new(vec![(0, y), (8, y)], *line))
                .map_err(draw_err)?;
            legend
                .draw(&PathElement::new(vec![(14, y), (22, y)], *line))
                .map_err(draw_err)?;
        } else {
            legend
                .draw(&PathElement::new(vec![(0, y), (22, y)], *line))
                .map_err(draw_err)?;
        }
        legend
            .draw(&Text::new(label.as_str(), (30, y), style.clone()))
            .map_err(draw_err)?;
    }
    Ok(())
}

fn boundary_style(kind: BoundaryKind) -> ShapeStyle {
    match kind {
        BoundaryKind::Socket => ShapeStyle::from(&BLACK.mix(0.7)).stroke_width(2),
        BoundaryKind::L3Domain => ShapeStyle::from(&RGBColor(120, 120, 120)).stroke_width(1),
    }
}

/// The value axis of [`hbars`]: its ends, with room for the values
/// written on the bars (`value_text`) and, for several series, for the
/// legend at the right; and whether every value is zero.
fn hbars_range(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    series: &[(String, Vec<f64>)],
    value_text: Option<&dyn Fn(f64) -> String>,
    label_area: u32,
    min_span: f64,
) -> (f64, f64, bool) {
    let k = series.len() as i32;
    let values: Vec<f64> = series.iter().flat_map(|s| s.1.iter().copied()).collect();
    let lo = values.iter().copied().fold(0.0, f64::min);
    let hi = values.iter().copied().fold(0.0, f64::max);
    // Every value zero: no bar to draw, so the panel says so instead of
    // showing an empty axis.
    let all_zero = lo == 0.0 && hi == 0.0;
    // The values the axis must reach: the bars', widened on the side of
    // the bars to `min_span` (a change of -0.6 % alone would otherwise fill
    // the plot as a change of -60 % does). Widened before the labels' room
    // is found, so that the room is in the widened axis's units.
    let missing = min_span - (hi - lo);
    let (reach_lo, reach_hi) = if all_zero || missing <= 0.0 {
        (lo, hi)
    } else if hi <= 0.0 {
        (lo - missing, hi)
    } else if lo >= 0.0 {
        (lo, hi + missing)
    } else {
        (lo - missing / 2.0, hi + missing / 2.0)
    };
    let plot_w = (area.dim_in_pixel().0 as f64 - label_area as f64 - 40.0).max(100.0);
    let (x0, mut x1) = if all_zero {
        (0.0, 1.0)
    } else {
        match value_text {
            Some(text) => {
                let mut labels: Vec<(f64, f64)> = values
                    .iter()
                    .map(|&v| (v, text_width(&text(v), 14.0) + VALUE_LABEL_GAP_PX))
                    .collect();
                // The widened ends, as values without text.
                labels.extend([(reach_lo, 0.0), (reach_hi, 0.0)]);
                value_ends_with_labels(&labels, plot_w)
            }
            None => {
                // No text beyond the bars: a twentieth of the span past
                // each end that has bars.
                let span = reach_hi - reach_lo;
                let x0 = if reach_lo < 0.0 {
                    reach_lo - span * 0.05
                } else {
                    0.0
                };
                let x1 = if reach_hi > 0.0 || reach_lo >= 0.0 {
                    reach_hi + span * 0.05
                } else {
                    0.0
                };
                (x0, x1)
            }
        }
    };
    if k > 1 {
        // Room at the right for the legend, so that it covers no bar: the
        // bars end where the legend's estimated width begins.
        let legend_w = series
            .iter()
            .map(|s| text_width(&s.0, 13.0))
            .fold(0.0, f64::max)
            + 60.0;
        let free = (0.95 - legend_w / plot_w).max(0.3);
        x1 = x1.max(x0 + (hi - x0) / free);
    }
    (x0, x1, all_zero)
}

/// The pixels a value written beside its bar takes besides its text: the
/// 6 px it stands off the bar's end and 6 px before the plot's edge.
const VALUE_LABEL_GAP_PX: f64 = 12.0;

/// The value axis's ends when each bar's value is written past its end
/// (left of a negative bar, right of the others): `labels` holds each
/// value and its text's width in pixels, `plot_w` the plot's width in
/// pixels. Each side gets the room its own longest-reaching label needs
/// and no more (a fixed share of the whole span left a -0.8 % bar beside
/// a +180 % one with a wide empty side). The room in value units grows
/// with the axis it is part of, so the ends are found by iterating to the
/// fixed point (labels are a small share of the plot: it converges in a
/// few steps; capped, in case labels are wider than the plot).
fn value_ends_with_labels(labels: &[(f64, f64)], plot_w: f64) -> (f64, f64) {
    let lo = labels.iter().map(|l| l.0).fold(0.0, f64::min);
    let hi = labels.iter().map(|l| l.0).fold(0.0, f64::max);
    let mut span = if hi > lo { hi - lo } else { 1.0 };
    let mut ends = (lo, hi);
    for _ in 0..64 {
        let per_px = span / plot_w;
        let x0 = labels
            .iter()
            .filter(|l| l.0 < 0.0)
            .map(|&(v, px)| v - px * per_px)
            .fold(lo, f64::min);
        let x1 = labels
            .iter()
            .filter(|l| l.0 >= 0.0)
            .map(|&(v, px)| v + px * per_px)
            .fold(hi, f64::max);
        ends = (x0, x1);
        let next = x1 - x0;
        if next - span <= span * 1e-9 {
            break;
        }
        span = next;
    }
    ends
}

/// A panel of horizontal bars: one group per category (top to bottom), a
/// bar per series in each group. The y axis is in half-bar units so that a
/// group's centre falls on an integer, where its name is written. One
/// function: every step draws on the one chart context it builds.
#[allow(clippy::too_many_arguments)]
fn hbars(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    title: &str,
    value_label: &str,
    category_label: &str,
    categories: &[String],
    series: &[(String, Vec<f64>)],
    value_text: Option<&dyn Fn(f64) -> String>,
    label_area: u32,
    min_span: f64,
) -> Result<(), PlotError> {
    let n = categories.len() as i32;
    let k = series.len() as i32;
    let group = 2 * k + 2;
    let (x0, x1, all_zero) = hbars_range(area, series, value_text, label_area, min_span);
    let top = n * group;
    let mut c = ChartBuilder::on(area)
        .caption(title, (FONT, 20))
        .margin(15)
        .x_label_area_size(50)
        .y_label_area_size(label_area)
        .set_label_area_size(LabelAreaPosition::Left, label_area)
        .build_cartesian_2d(x0..x1, 0..top + 2)
        .map_err(draw_err)?;
    c.configure_mesh()
        .disable_y_mesh()
        .set_tick_mark_size(LabelAreaPosition::Left, 0)
        .light_line_style(WHITE.mix(0.0))
        .y_label_formatter(&|_| String::new())
        .x_label_formatter(&|v| axis_number(*v, x1 - x0))
        .x_desc(value_label)
        .y_desc(category_label)
        .axis_desc_style((FONT, 16))
        .label_style((FONT, 13))
        .draw()
        .map_err(draw_err)?;
    if all_zero {
        let (px, py) = c.backend_coord(&((x0 + x1) / 2.0, top / 2 + 1));
        let base = area.get_base_pixel();
        area.draw(&Text::new(
            "0 for every field in every variant",
            (px - base.0, py - base.1),
            TextStyle::from((FONT, 16).into_font())
                .color(&BLACK)
                .pos(Pos::new(HPos::Center, VPos::Center)),
        ))
        .map_err(draw_err)?;
    }
    // The category names, right-aligned left of the axis at their group's
    // centre (drawn by hand: plotters' own labels fall on round numbers).
    let base = area.get_base_pixel();
    let style = TextStyle::from((FONT, 13).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Right, VPos::Center));
    for (i, name) in categories.iter().enumerate() {
        let centre = (n - 1 - i as i32) * group + 2 + k;
        let (px, py) = c.backend_coord(&(x0, centre));
        area.draw(&Text::new(
            name.as_str(),
            (px - base.0 - 8, py - base.1),
            style.clone(),
        ))
        .map_err(draw_err)?;
    }
    for (j, (name, vals)) in series.iter().enumerate() {
        let col = color(j);
        let bars = vals.iter().enumerate().map(|(i, &v)| {
            let g = (n - 1 - i as i32) * group;
            let y = g + 2 + 2 * (k - 1 - j as i32);
            Rectangle::new([(0.0, y), (v, y + 2)], col.filled())
        });
        let ann = c.draw_series(bars).map_err(draw_err)?;
        if k > 1 {
            ann.label(name)
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], col.filled()));
        }
        if let Some(text) = value_text {
            let labels = vals.iter().enumerate().map(|(i, &v)| {
                let g = (n - 1 - i as i32) * group;
                let y = g + 3 + 2 * (k - 1 - j as i32);
                let (h, dx) = if v < 0.0 {
                    (HPos::Right, -6)
                } else {
                    (HPos::Left, 6)
                };
                let style = TextStyle::from((FONT, 14).into_font())
                    .color(&BLACK)
                    .pos(Pos::new(h, VPos::Center));
                EmptyElement::at((v, y)) + Text::new(text(v), (dx, 0), style)
            });
            c.draw_series(labels).map_err(draw_err)?;
        }
    }
    c.draw_series(std::iter::once(PathElement::new(
        vec![(0.0, 0), (0.0, top + 2)],
        BLACK.stroke_width(1),
    )))
    .map_err(draw_err)?;
    if k > 1 {
        c.configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .label_font((FONT, 13))
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(draw_err)?;
    }
    Ok(())
}

fn label_area_for(names: &[String]) -> u32 {
    let w = names
        .iter()
        .map(|s| text_width(s, 13.0))
        .fold(0.0, f64::max);
    (w as u32 + 45).clamp(90, 420)
}

/// The narrowest value axis of a chart of changes in percent, in
/// percentage points: changes under a percent or two (often the noise of
/// a run) then draw as the short bars they are, not across the plot.
pub const MIN_CHANGE_SPAN_PERCENT: f64 = 5.0;

/// The comparison chart as an SVG document.
pub fn comparison(chart: &ComparisonChart) -> Result<String, PlotError> {
    if chart.bars.is_empty() {
        return Err(PlotError::Empty("the list of bars".into()));
    }
    for b in &chart.bars {
        check_finite(&format!("bar `{}`", b.label), b.value)?;
    }
    let names: Vec<String> = chart.bars.iter().map(|b| b.label.clone()).collect();
    let values: Vec<f64> = chart.bars.iter().map(|b| b.value).collect();
    let label_area = label_area_for(&names);
    let height = 150 + 44 * chart.bars.len() as u32;
    let width = (label_area + 700).max(800).max(title_width(&chart.title));
    let fmt = |v: f64| format!("{}%", signed_percent(v));
    render(width, height, |root| {
        hbars(
            root,
            &chart.title,
            &chart.value_label,
            &chart.category_label,
            &names,
            &[(String::new(), values)],
            Some(&fmt),
            label_area,
            MIN_CHANGE_SPAN_PERCENT,
        )
    })
}

/// The checks and the frame (label area, width, height) of horizontal bars
/// grouped by category, one bar per series in each group: the comparison
/// chart's and the book's bar charts'.
pub(crate) fn grouped_bars_frame(
    title: &str,
    categories: &[String],
    series: &[(String, Vec<f64>)],
) -> Result<(u32, u32, u32), PlotError> {
    if categories.is_empty() {
        return Err(PlotError::Empty("the list of groups".into()));
    }
    if series.is_empty() {
        return Err(PlotError::Empty("the list of series".into()));
    }
    for (name, values) in series {
        if values.len() != categories.len() {
            return Err(PlotError::Invalid(format!(
                "series `{name}` has not one value per group"
            )));
        }
        for &v in values {
            check_finite(&format!("a value of `{name}`"), v)?;
        }
    }
    let label_area = label_area_for(categories);
    let k = series.len() as u32;
    let height = 150 + (2 * k + 2) * 11 * categories.len() as u32;
    let width = (label_area + 760).max(860).max(title_width(title));
    Ok((label_area, width, height))
}

/// The grouped comparison chart as an SVG document.
pub fn grouped_comparison(chart: &GroupedComparisonChart) -> Result<String, PlotError> {
    let (label_area, width, height) =
        grouped_bars_frame(&chart.title, &chart.categories, &chart.series)?;
    let fmt = |v: f64| format!("{}%", signed_percent(v));
    render(width, height, |root| {
        hbars(
            root,
            &chart.title,
            &chart.value_label,
            &chart.category_label,
            &chart.categories,
            &chart.series,
            Some(&fmt),
            label_area,
            MIN_CHANGE_SPAN_PERCENT,
        )
    })
}

/// A signed percentage to one decimal, with more decimals where one would
/// round a value that is not -100 % (or +100 %) to it: a drop of 99.99 %
/// reads `-99.99`, since `-100.0` would say that nothing is left; a value
/// that rounds to zero is `0.0`, unsigned.
pub fn signed_percent(p: f64) -> String {
    // A value that rounds to zero has no sign (`-0.0` would read as a
    // small drop).
    if format!("{p:.1}").parse::<f64>().is_ok_and(|t| t == 0.0) {
        return "0.0".into();
    }
    let mut text = format!("{p:+.1}");
    for decimals in 2..=6 {
        let rounded_to_100 = text.parse::<f64>().is_ok_and(|t| t.abs() == 100.0);
        if !rounded_to_100 || p.abs() == 100.0 {
            break;
        }
        text = format!("{p:+.decimals$}");
    }
    text
}

/// The pixels of bars a panel of the attribution chart aims at: a
/// panel's bars get thinner as fields and variants are added, so that ten
/// variants over a dozen fields stay one screen tall or so (at nine
/// pixels per half bar they made a 5000-pixel chart).
const ATTRIBUTION_PANEL_BARS_PX: f64 = 480.0;
/// The thickest and the thinnest half bar of an attribution panel, in
/// pixels: the thickest is what a few fields get, the thinnest keeps a
/// bar visible beside its neighbours however many there are.
const ATTRIBUTION_HALF_BAR_PX: (f64, f64) = (9.0, 2.0);
/// The smallest bar a field needs, as a share of the panel's longest, to
/// be drawn: smaller ones would be a pixel or less, and only push the
/// fields that matter apart (the panel's title counts them).
const ATTRIBUTION_SMALLEST_SHARE: f64 = 0.01;
/// Room of a panel besides its bars: its title, axis and axis label.
const ATTRIBUTION_PANEL_FRAME_PX: u32 = 110;

/// The attribution chart as an SVG document. Each panel draws only the
/// fields with a value in it (a field no variant waited on is left out of
/// the waiting panel), and its bars are as thick as its number of bars
/// allows (`ATTRIBUTION_PANEL_BARS_PX`).
pub fn attribution(chart: &AttributionChart) -> Result<String, PlotError> {
    check_attribution(chart)?;
    let k = chart.variants.len();
    // One panel's fields (those with a bar of at least
    // ATTRIBUTION_SMALLEST_SHARE of its longest), its series, and how
    // many fields with smaller values it leaves out.
    type Panel = (Vec<String>, Vec<(String, Vec<f64>)>, usize);
    let panel_of = |get: fn(&FieldRow) -> &Vec<f64>| -> Panel {
        let longest = chart
            .rows
            .iter()
            .flat_map(|r| get(r).iter().map(|v| v.abs()))
            .fold(0.0, f64::max);
        let shown = |r: &&FieldRow| {
            get(r)
                .iter()
                .any(|v| *v != 0.0 && v.abs() >= longest * ATTRIBUTION_SMALLEST_SHARE)
        };
        let rows: Vec<&FieldRow> = chart.rows.iter().filter(shown).collect();
        let small = chart
            .rows
            .iter()
            .filter(|r| !shown(r) && get(r).iter().any(|v| *v != 0.0))
            .count();
        let names = rows.iter().map(|r| r.field.clone()).collect();
        let series = chart
            .variants
            .iter()
            .enumerate()
            .map(|(j, v)| (v.clone(), rows.iter().map(|r| get(r)[j]).collect()))
            .collect();
        (names, series, small)
    };
    let (hitm_names, hitm, hitm_small) = panel_of(|r| &r.hitm);
    let (stall_names, stall, stall_small) = panel_of(|r| &r.stall_cycles);
    // A panel's title, with the fields it leaves out as too small to see.
    let titled = |title: &str, small: usize| match small {
        0 => title.to_string(),
        1 => format!("{title}; 1 field under 1 % not drawn"),
        n => format!("{title}; {n} fields under 1 % not drawn"),
    };
    let hitm_title = titled(
        "HITM (misses served from another core's modified line)",
        hitm_small,
    );
    let stall_title = titled(
        "Cycles waited on the field's accesses, stalled or spinning",
        stall_small,
    );
    // A panel whose every bar is 0 (a run without HITM transfers, most
    // often) is left out, and a line under the title says so: an empty
    // panel on a made-up 0-1 axis reads as a drawing error.
    let hitm_zero = hitm_names.is_empty();
    let stall_zero = stall_names.is_empty();
    if hitm_zero && stall_zero {
        return Err(PlotError::Empty(
            "the fields' values (0 in every panel)".into(),
        ));
    }
    let note = if hitm_zero {
        "No HITM transfers in this run (0 for every field in every variant): \
         the HITM panel is left out"
    } else if stall_zero {
        "No cycles waited in this run (0 for every field in every variant): \
         the waiting panel is left out"
    } else {
        ""
    };
    let all_names: Vec<String> = chart.rows.iter().map(|r| r.field.clone()).collect();
    let label_area = label_area_for(&all_names);
    // A panel's height: its frame, and its bars in half-bar units (a
    // field's group is 2k + 2 of them) at the thickness they allow.
    let panel_height = |fields: usize| -> u32 {
        if fields == 0 {
            return 0;
        }
        let units = ((2 * k + 2) * fields) as f64;
        let (thickest, thinnest) = ATTRIBUTION_HALF_BAR_PX;
        let half_bar = (ATTRIBUTION_PANEL_BARS_PX / units).clamp(thinnest, thickest);
        ATTRIBUTION_PANEL_FRAME_PX + (units * half_bar).round() as u32
    };
    let hitm_h = panel_height(hitm_names.len());
    let stall_h = panel_height(stall_names.len());
    let head_h: u32 = if note.is_empty() { 50 } else { 80 };
    let width = (label_area + 700)
        .max(800)
        .max(title_width(&chart.title))
        .max(text_width(&hitm_title, 20.0) as u32 + 80)
        .max(text_width(&stall_title, 20.0) as u32 + 80)
        .max(text_width(note, 15.0) as u32 + 40);
    let height = head_h + hitm_h + stall_h;
    render(width, height, |root| {
        let (head, body) = root.split_vertically(head_h);
        head.draw(&Text::new(
            chart.title.as_str(),
            (width as i32 / 2, 25),
            TextStyle::from((FONT, 22).into_font())
                .color(&BLACK)
                .pos(Pos::new(HPos::Center, VPos::Center)),
        ))
        .map_err(draw_err)?;
        if !note.is_empty() {
            head.draw(&Text::new(
                note,
                (width as i32 / 2, 60),
                TextStyle::from((FONT, 15).into_font())
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Center, VPos::Center)),
            ))
            .map_err(draw_err)?;
        }
        let hitm_panel = |area: &DrawingArea<SVGBackend<'_>, Shift>| {
            hbars(
                area,
                &hitm_title,
                &chart.hitm_label,
                "field",
                &hitm_names,
                &hitm,
                None,
                label_area,
                0.0,
            )
        };
        let stall_panel = |area: &DrawingArea<SVGBackend<'_>, Shift>| {
            hbars(
                area,
                &stall_title,
                &chart.stall_label,
                "field",
                &stall_names,
                &stall,
                None,
                label_area,
                0.0,
            )
        };
        if hitm_zero {
            stall_panel(&body)
        } else if stall_zero {
            hitm_panel(&body)
        } else {
            let (upper, lower) = body.split_vertically(hitm_h);
            hitm_panel(&upper)?;
            stall_panel(&lower)
        }
    })
}

/// Refuses a chart without fields or variants, a field without one value
/// per variant in each panel, or a value that is not finite.
fn check_attribution(chart: &AttributionChart) -> Result<(), PlotError> {
    if chart.rows.is_empty() {
        return Err(PlotError::Empty("the list of fields".into()));
    }
    if chart.variants.is_empty() {
        return Err(PlotError::Empty("the list of variants".into()));
    }
    let k = chart.variants.len();
    for r in &chart.rows {
        if r.hitm.len() != k || r.stall_cycles.len() != k {
            return Err(PlotError::Invalid(format!(
                "field `{}` has not one value per variant",
                r.field
            )));
        }
        for &v in r.hitm.iter().chain(&r.stall_cycles) {
            check_finite(&format!("a value of field `{}`", r.field), v)?;
        }
    }
    Ok(())
}

/// Colour of the tail padding, apart from holes and from fields.
const TAIL: RGBColor = RGBColor(214, 206, 236);

/// Colour of a field by its share of the largest traffic.
fn heat(share: f64) -> RGBColor {
    if share <= 0.0 {
        return RGBColor(205, 222, 238);
    }
    let s = share.clamp(0.0, 1.0);
    let lerp = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * s).round() as u8;
    RGBColor(lerp(255, 190), lerp(236, 20), lerp(160, 30))
}

/// The cache-line map as an SVG document. Its parts are drawn by
/// functions; what is left is the figure's geometry and the order of
/// drawing, which share every dimension.
pub fn line_map(chart: &LineMapChart) -> Result<String, PlotError> {
    check_line_map(chart)?;
    let (fields_end, tail_bytes, hole_bytes) = padding_of(chart);
    let sizes = if chart.subtitle.is_empty() {
        format!(
            "struct size {} bytes (sizeof): {} in fields, {} in holes, {} of tail padding",
            chart.size,
            chart.size as usize - hole_bytes - tail_bytes as usize,
            hole_bytes,
            tail_bytes
        )
    } else {
        chart.subtitle.clone()
    };
    let lb = chart.line_bytes;
    let rows = chart.size.div_ceil(lb);
    let grid = LineGrid {
        line_bytes: lb,
        cell: (768 / lb).max(4) as i32,
        left: 100,
        top: 110,
        row_h: 46,
        row_gap: 10,
    };
    let left = grid.left;
    let grid_w = grid.cell * lb as i32;
    // The key's columns: the names as wide as the longest.
    let name_w = widest(chart.fields.iter().map(|f| f.name.as_str()), 12.0, 280.0) as i32 + 20;
    let cols = [
        left - 60,
        left - 20,
        left - 20 + name_w,
        left - 20 + name_w + 80,
        left - 20 + name_w + 150,
    ];
    let width = (left + grid_w + 40)
        .max(cols[4] + 80)
        .max(text_width(&sizes, 14.0) as i32 + 40)
        .max(title_width(&chart.title) as i32);
    // The colour key's text, wrapped to the figure.
    let key_text = wrap(
        &format!("colour: {}", chart.traffic_label),
        13.0,
        (width - left - 20) as f64,
    );
    let key_top = grid.top + rows as i32 * (grid.row_h + grid.row_gap) + 20;
    let key_line = 18;
    let key_extra = 16 * (key_text.len() as i32 - 1);
    let height = key_top + key_extra + 70 + key_line * (chart.fields.len() as i32 + 1) + 20;
    check_finite("the top of the colour scale", chart.traffic_max)?;
    let max_traffic = chart
        .fields
        .iter()
        .map(|f| f.traffic)
        .fold(chart.traffic_max.max(0.0), f64::max);
    let share = |t: f64| {
        if max_traffic > 0.0 {
            t / max_traffic
        } else {
            0.0
        }
    };
    render(width as u32, height as u32, |root| {
        let d = |e: Result<(), _>| e.map_err(draw_err);
        d(root.draw(&Text::new(
            chart.title.as_str(),
            (width / 2, 25),
            map_text(22, HPos::Center),
        )))?;
        d(root.draw(&Text::new(
            sizes.as_str(),
            (width / 2, 50),
            map_text(14, HPos::Center),
        )))?;
        d(root.draw(&Text::new(
            format!("{lb} bytes per row (one cache line); x: byte offset in the line"),
            (width / 2, 70),
            map_text(14, HPos::Center),
        )))?;
        draw_line_rows(root, &grid, chart.size)?;
        for (i, f) in chart.fields.iter().enumerate() {
            draw_map_field(root, &grid, i, f, heat(share(f.traffic)))?;
        }
        draw_tail_padding(root, &grid, fields_end, chart.size)?;
        // Colour key.
        for (i, line) in key_text.iter().enumerate() {
            d(root.draw(&Text::new(
                line.as_str(),
                (left, key_top + 16 * i as i32),
                map_text(13, HPos::Left),
            )))?;
        }
        let ky = key_top + key_extra;
        // Swatches for what the map shows besides the scale: only those
        // drawn.
        let mut swatches: Vec<(RGBColor, &str, i32)> = Vec::new();
        if chart.fields.iter().any(|f| share(f.traffic) <= 0.0) {
            swatches.push((heat(0.0), "none", 90));
        }
        if hole_bytes > 0 {
            swatches.push((RGBColor(232, 232, 232), "hole (padding)", 140));
        }
        if tail_bytes > 0 {
            swatches.push((TAIL, "tail padding (to sizeof)", 200));
        }
        draw_heat_scale(root, left, ky, max_traffic, &swatches)?;
        draw_field_table(root, &cols, ky + 70, key_line, &chart.fields)
    })
}

/// Where the fields end, and the struct's padding: bytes after the last
/// field are the tail padding up to `sizeof`; the other bytes no field
/// covers are holes.
fn padding_of(chart: &LineMapChart) -> (u32, u32, usize) {
    let fields_end = chart
        .fields
        .iter()
        .map(|f| f.offset + f.size)
        .max()
        .unwrap_or(0);
    let tail_bytes = chart.size - fields_end;
    let mut covered = vec![false; fields_end as usize];
    for f in &chart.fields {
        for b in f.offset..f.offset + f.size {
            covered[b as usize] = true;
        }
    }
    let hole_bytes = covered.iter().filter(|c| !**c).count();
    (fields_end, tail_bytes, hole_bytes)
}

/// Refuses a map with no fields, a zero size, a traffic that is not a
/// finite non-negative number, or a field outside the struct.
fn check_line_map(chart: &LineMapChart) -> Result<(), PlotError> {
    if chart.fields.is_empty() {
        return Err(PlotError::Empty("the list of fields".into()));
    }
    if chart.size == 0 || chart.line_bytes == 0 {
        return Err(PlotError::Invalid("a struct or line size of zero".into()));
    }
    for f in &chart.fields {
        check_finite(&format!("traffic of `{}`", f.name), f.traffic)?;
        if f.traffic < 0.0 {
            return Err(PlotError::Invalid(format!(
                "traffic of `{}` is negative",
                f.name
            )));
        }
        if f.size == 0 || f.offset.saturating_add(f.size) > chart.size {
            return Err(PlotError::Invalid(format!(
                "field `{}` (offset {}, size {}) is not inside the struct of {} bytes",
                f.name, f.offset, f.size, chart.size
            )));
        }
    }
    Ok(())
}

/// Where the line map's rows are: one cache line per row, `cell` pixels a
/// byte, from (`left`, `top`).
struct LineGrid {
    line_bytes: u32,
    cell: i32,
    left: i32,
    top: i32,
    row_h: i32,
    row_gap: i32,
}

impl LineGrid {
    /// The top of row `r`.
    fn row_y(&self, r: u32) -> i32 {
        self.top + r as i32 * (self.row_h + self.row_gap)
    }

    /// The part of the bytes `start..end` in `start`'s row: its end and
    /// its box (x0, x1, y).
    fn piece(&self, start: u32, end: u32) -> (u32, i32, i32, i32) {
        let lb = self.line_bytes;
        let r = start / lb;
        let stop = end.min((r + 1) * lb);
        let x0 = self.left + (start - r * lb) as i32 * self.cell;
        let x1 = self.left + (stop - r * lb) as i32 * self.cell;
        (stop, x0, x1, self.row_y(r))
    }
}

/// The line map's text style: black, centred vertically.
fn map_text(size: i32, h: HPos) -> TextStyle<'static> {
    TextStyle::from((FONT, size).into_font())
        .color(&BLACK)
        .pos(Pos::new(h, VPos::Center))
}

/// The byte ruler and each line's row, hatched grey where no field will
/// cover it (holes).
fn draw_line_rows(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    grid: &LineGrid,
    size: u32,
) -> Result<(), PlotError> {
    let d = |e: Result<(), _>| e.map_err(draw_err);
    let (lb, left, top, cell, row_h) =
        (grid.line_bytes, grid.left, grid.top, grid.cell, grid.row_h);
    // Byte ruler.
    for b in (0..=lb).step_by(8) {
        let x = left + b as i32 * cell;
        d(root.draw(&Text::new(
            format!("{b}"),
            (x, top - 14),
            map_text(12, HPos::Center),
        )))?;
        d(root.draw(&PathElement::new(
            vec![(x, top - 6), (x, top)],
            BLACK.stroke_width(1),
        )))?;
    }
    for r in 0..size.div_ceil(lb) {
        let y = grid.row_y(r);
        d(root.draw(&Text::new(
            format!("line {r}"),
            (left - 12, y + row_h / 2 - 8),
            map_text(13, HPos::Right),
        )))?;
        d(root.draw(&Text::new(
            format!("+{}", r * lb),
            (left - 12, y + row_h / 2 + 9),
            map_text(12, HPos::Right),
        )))?;
        let bytes = (size - r * lb).min(lb) as i32;
        // Holes: what no field covers shows this hatched grey.
        d(root.draw(&Rectangle::new(
            [(left, y), (left + bytes * cell, y + row_h)],
            RGBColor(232, 232, 232).filled(),
        )))?;
        let mut x = left - row_h;
        while x < left + bytes * cell {
            let (x0, y0) = (x.max(left), y + row_h - (x.max(left) - x));
            let x1 = (x + row_h).min(left + bytes * cell);
            let y1 = y + row_h - (x1 - x);
            d(root.draw(&PathElement::new(
                vec![(x0, y0), (x1, y1)],
                RGBColor(200, 200, 200).stroke_width(1),
            )))?;
            x += 8;
        }
        d(root.draw(&Rectangle::new(
            [(left, y), (left + bytes * cell, y + row_h)],
            BLACK.stroke_width(1),
        )))?;
    }
    Ok(())
}

/// Field `i` (0-based) in `fill`, one box per line it spans, labelled
/// with its name (or its number where the name does not fit) and, where
/// it starts, its offset.
fn draw_map_field(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    grid: &LineGrid,
    i: usize,
    f: &MapField,
    fill: RGBColor,
) -> Result<(), PlotError> {
    let d = |e: Result<(), _>| e.map_err(draw_err);
    let row_h = grid.row_h;
    let end = f.offset + f.size;
    let mut start = f.offset;
    let mut first = true;
    while start < end {
        let (stop, x0, x1, y) = grid.piece(start, end);
        d(root.draw(&Rectangle::new([(x0, y), (x1, y + row_h)], fill.filled())))?;
        d(root.draw(&Rectangle::new(
            [(x0, y), (x1, y + row_h)],
            BLACK.stroke_width(1),
        )))?;
        let room = (x1 - x0 - 6) as f64;
        let tag = format!("{}", i + 1);
        let label = if first && text_width(&f.name, 12.0) <= room {
            Some(f.name.clone())
        } else if text_width(&tag, 12.0) <= room {
            Some(tag)
        } else {
            None
        };
        // The field's offset under its name, where it starts.
        let offset = format!("+{}", f.offset);
        let offset_fits = first && text_width(&offset, 11.0) <= room;
        if let Some(label) = label {
            let y_label = if offset_fits {
                y + row_h / 2 - 8
            } else {
                y + row_h / 2
            };
            d(root.draw(&Text::new(
                label,
                ((x0 + x1) / 2, y_label),
                map_text(12, HPos::Center),
            )))?;
        }
        if offset_fits {
            d(root.draw(&Text::new(
                offset,
                ((x0 + x1) / 2, y + row_h / 2 + 10),
                map_text(11, HPos::Center),
            )))?;
        }
        first = false;
        start = stop;
    }
    Ok(())
}

/// Tail padding: from the end of the last field to `sizeof`.
fn draw_tail_padding(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    grid: &LineGrid,
    fields_end: u32,
    size: u32,
) -> Result<(), PlotError> {
    let d = |e: Result<(), _>| e.map_err(draw_err);
    let row_h = grid.row_h;
    let mut start = fields_end;
    while start < size {
        let (stop, x0, x1, y) = grid.piece(start, size);
        d(root.draw(&Rectangle::new([(x0, y), (x1, y + row_h)], TAIL.filled())))?;
        d(root.draw(&Rectangle::new(
            [(x0, y), (x1, y + row_h)],
            BLACK.stroke_width(1),
        )))?;
        let label = format!("tail {} B", stop - start);
        if text_width(&label, 12.0) <= (x1 - x0 - 6) as f64 {
            d(root.draw(&Text::new(
                label,
                ((x0 + x1) / 2, y + row_h / 2),
                map_text(12, HPos::Center),
            )))?;
        }
        start = stop;
    }
    Ok(())
}

/// The colour scale from 0 to `max_traffic` at (`left`, `ky`), then the
/// swatches (colour, name, width taken).
fn draw_heat_scale(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    left: i32,
    ky: i32,
    max_traffic: f64,
    swatches: &[(RGBColor, &str, i32)],
) -> Result<(), PlotError> {
    let d = |e: Result<(), _>| e.map_err(draw_err);
    let bar_w = 300;
    // A scale from 0 to 0 says nothing: with no traffic anywhere the
    // key says so in words instead.
    let mut sx = left;
    if max_traffic <= 0.0 {
        let none = "0 in every field (and every variant): no scale";
        d(root.draw(&Text::new(none, (left, ky + 22), map_text(12, HPos::Left))))?;
        sx += text_width(none, 12.0) as i32 + 30;
    }
    // 60 steps of 5 px.
    for s in (0..60).filter(|_| max_traffic > 0.0) {
        let col = heat((s + 1) as f64 / 60.0);
        d(root.draw(&Rectangle::new(
            [(left + 5 * s, ky + 14), (left + 5 * s + 5, ky + 30)],
            col.filled(),
        )))?;
    }
    if max_traffic > 0.0 {
        d(root.draw(&Rectangle::new(
            [(left, ky + 14), (left + bar_w, ky + 30)],
            BLACK.stroke_width(1),
        )))?;
        d(root.draw(&Text::new("0", (left, ky + 42), map_text(12, HPos::Center))))?;
        d(root.draw(&Text::new(
            short_number(max_traffic),
            (left + bar_w, ky + 42),
            map_text(12, HPos::Center),
        )))?;
        sx = left + bar_w + 40;
    }
    for &(colour, name, w) in swatches {
        d(root.draw(&Rectangle::new(
            [(sx, ky + 14), (sx + 16, ky + 30)],
            colour.filled(),
        )))?;
        d(root.draw(&Rectangle::new(
            [(sx, ky + 14), (sx + 16, ky + 30)],
            BLACK.stroke_width(1),
        )))?;
        d(root.draw(&Text::new(
            name,
            (sx + 22, ky + 22),
            map_text(12, HPos::Left),
        )))?;
        sx += w;
    }
    Ok(())
}

/// The field key: number, name, offset, size and traffic of each field,
/// one row of `key_line` pixels each under a header at `ty`.
fn draw_field_table(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    cols: &[i32; 5],
    ty: i32,
    key_line: i32,
    fields: &[MapField],
) -> Result<(), PlotError> {
    let d = |e: Result<(), _>| e.map_err(draw_err);
    let head = ["#", "field", "offset", "size", "colour"];
    for (x, h) in cols.iter().zip(head) {
        d(root.draw(&Text::new(h, (*x, ty), map_text(12, HPos::Left))))?;
    }
    for (i, f) in fields.iter().enumerate() {
        let y = ty + key_line * (i as i32 + 1);
        let cells = [
            format!("{}", i + 1),
            f.name.clone(),
            format!("{} B", f.offset),
            format!("{} B", f.size),
            short_number(f.traffic),
        ];
        for (x, s) in cols.iter().zip(cells) {
            d(root.draw(&Text::new(s, (*x, y), map_text(12, HPos::Left))))?;
        }
    }
    Ok(())
}
