//! The validation charts: measured against simulated latency per class of
//! CPU pairs, per machine.

use super::{
    check_finite, color, draw_err, render, short_number, text_width, title_width, widest,
    PlotError, FONT,
};
use plotters::coord::combinators::WithKeyPoints;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One class of one machine: its measured and simulated value.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidationPoint {
    /// The machine (a colour and a legend entry each).
    pub machine: String,
    /// The class of pairs, e.g. "cross-socket".
    pub class: String,
    pub measured: f64,
    pub simulated: f64,
    /// The class misses its bound for a documented reason (a known miss of
    /// the calibration): marked apart from an unexplained miss.
    pub known_miss: bool,
    /// Whether the preset was fitted on this class: a point that only
    /// checks the fit is drawn apart from a prediction.
    pub role: PointRole,
}

/// What a class was to the preset it validates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PointRole {
    /// The preset's numbers were fitted on it.
    Calibration,
    /// Held out from the fit: the simulated value predicts it.
    Prediction,
    /// Not known (a user's own matrix).
    Unknown,
}

impl PointRole {
    /// The marker's name in the legend and the labels.
    fn describe(self) -> &'static str {
        match self {
            PointRole::Calibration => "calibration (the preset was fitted on it)",
            PointRole::Prediction => "prediction (held out from the fit)",
            PointRole::Unknown => "role not known (your own matrix)",
        }
    }
    fn short(self) -> &'static str {
        match self {
            PointRole::Calibration => "calibration",
            PointRole::Prediction => "prediction",
            PointRole::Unknown => "role not known",
        }
    }
}

/// A point's marker, by its role: a circle for a prediction, a square
/// for a class the preset was fitted on, a triangle where the role is not
/// known; `size` is the half-width in pixels.
fn draw_marker<DB, CT>(
    area: &DrawingArea<DB, CT>,
    role: PointRole,
    at: CT::From,
    size: i32,
    style: ShapeStyle,
) -> Result<(), PlotError>
where
    DB: DrawingBackend,
    CT: CoordTranslate,
    CT::From: Clone + 'static,
{
    let r = match role {
        PointRole::Prediction => {
            area.draw(&(EmptyElement::at(at) + Circle::new((0, 0), size, style)))
        }
        PointRole::Calibration => area
            .draw(&(EmptyElement::at(at) + Rectangle::new([(-size, -size), (size, size)], style))),
        PointRole::Unknown => {
            area.draw(&(EmptyElement::at(at) + TriangleMarker::new((0, 0), size + 1, style)))
        }
    };
    r.map_err(draw_err)
}

impl ValidationPoint {
    /// (simulated - measured) / measured, in percent.
    pub fn error_pct(&self) -> f64 {
        (self.simulated - self.measured) / self.measured * 100.0
    }
}

/// Outside the band, known miss or not.
const MISS: RGBColor = RGBColor(200, 30, 30);
/// A documented known miss.
const KNOWN_MISS: RGBColor = RGBColor(230, 140, 0);
/// Within the band.
const WITHIN: RGBColor = RGBColor(60, 120, 180);

/// A percentage with one decimal and its sign (none on a value that rounds
/// to zero; more decimals where one would make it ±100 %), the one
/// precision of both validation charts, as `bounce validate`'s table
/// writes it.
fn pct(p: f64) -> String {
    format!("{} %", super::signed_percent(p))
}

/// What a legend entry of the scatter shows.
#[derive(Clone, Copy)]
enum Swatch {
    /// The colour of the machine with this index.
    Machine(usize),
    /// The marker of a role.
    Role(PointRole),
    Line,
    Band,
    Ring(RGBColor),
}

/// Measured (x) against simulated (y), both on log axes, with the line
/// y = x and a band of ±`band_pct` percent around it.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidationChart {
    pub title: String,
    /// e.g. "measured one-way latency, median per class (ns)".
    pub x_label: String,
    pub y_label: String,
    /// Half-width of the band around y = x, in percent.
    pub band_pct: f64,
    pub points: Vec<ValidationPoint>,
}

fn check_points(points: &[ValidationPoint]) -> Result<(), PlotError> {
    if points.is_empty() {
        return Err(PlotError::Empty("the list of classes".into()));
    }
    for p in points {
        let what = format!("`{}` of `{}`", p.class, p.machine);
        check_finite(&what, p.measured)?;
        check_finite(&what, p.simulated)?;
        if p.measured <= 0.0 || p.simulated <= 0.0 {
            return Err(PlotError::Invalid(format!(
                "{what} is not positive (log axes)"
            )));
        }
    }
    Ok(())
}

/// The machines in first-seen order.
fn machines(points: &[ValidationPoint]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for p in points {
        if !out.contains(&p.machine.as_str()) {
            out.push(&p.machine);
        }
    }
    out
}

/// The scatter of measured against simulated, as an SVG document.
pub fn validation_scatter(chart: &ValidationChart) -> Result<String, PlotError> {
    check_points(&chart.points)?;
    check_finite("the band", chart.band_pct)?;
    let band = chart.band_pct.clamp(0.0, 90.0) / 100.0;
    let values = chart.points.iter().flat_map(|p| [p.measured, p.simulated]);
    let lo = values.clone().fold(f64::INFINITY, f64::min);
    let hi = values.fold(0.0, f64::max);
    // A decade-aligned margin so the extreme points are not on the frame.
    let (v0, v1) = (lo / 1.4, hi * 1.4);
    let ticks = one_two_five_ticks(v0, v1);
    let machines = machines(&chart.points);
    let entries = scatter_legend_entries(chart, &machines);
    let legend_w = widest(entries.iter().map(|(e, _)| e.as_str()), 13.0, 0.0) as u32 + 50;
    let plot_w = 760.max(title_width(&chart.title) + 100);
    let height = 720.max(140 + 20 * entries.len() as u32);
    render(plot_w + legend_w, height, |root| {
        let (plot, legend) = root.split_horizontally(plot_w);
        let mut c = ChartBuilder::on(&plot)
            .caption(&chart.title, (FONT, 22))
            .margin(20)
            .x_label_area_size(55)
            .y_label_area_size(80)
            .build_cartesian_2d(
                (v0..v1).log_scale().with_key_points(ticks.clone()),
                (v0..v1).log_scale().with_key_points(ticks.clone()),
            )
            .map_err(draw_err)?;
        c.configure_mesh()
            .x_desc(&chart.x_label)
            .y_desc(&chart.y_label)
            .axis_desc_style((FONT, 16))
            .label_style((FONT, 13))
            .x_label_formatter(&|v| short_number(*v))
            .y_label_formatter(&|v| short_number(*v))
            .light_line_style(WHITE.mix(0.0))
            .bold_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(draw_err)?;
        let band_fill = RGBColor(160, 200, 160).mix(0.35);
        c.draw_series(std::iter::once(Polygon::new(
            // Every corner inside the plotted range (corners outside it
            // would be clipped out of shape).
            vec![
                (v0, v0),
                (v0 / (1.0 - band), v0),
                (v1, v1 * (1.0 - band)),
                (v1, v1),
                (v1 / (1.0 + band), v1),
                (v0, v0 * (1.0 + band)),
            ],
            band_fill.filled(),
        )))
        .map_err(draw_err)?;
        c.draw_series(std::iter::once(PathElement::new(
            vec![(v0, v0), (v1, v1)],
            BLACK.stroke_width(1),
        )))
        .map_err(draw_err)?;
        for (i, m) in machines.iter().enumerate() {
            for p in chart.points.iter().filter(|p| p.machine == *m) {
                draw_marker(
                    c.plotting_area(),
                    p.role,
                    (p.measured, p.simulated),
                    4,
                    color(i).filled(),
                )?;
            }
        }
        draw_scatter_misses(&mut c, &plot, chart)?;
        draw_scatter_legend(&legend, &entries, band_fill)
    })
}

/// Ticks at 1, 2 and 5 times the powers of ten inside `v0..=v1`
/// (plotters' own log ticks can write one value twice).
fn one_two_five_ticks(v0: f64, v1: f64) -> Vec<f64> {
    let mut ticks = Vec::new();
    let mut decade = 10f64.powi(v0.log10().floor() as i32);
    while decade <= v1 {
        for m in [1.0, 2.0, 5.0] {
            let t = decade * m;
            if t >= v0 && t <= v1 {
                ticks.push(t);
            }
        }
        decade *= 10.0;
    }
    ticks
}

/// The points' roles that some point of `chart` has, in the legends' order.
fn drawn_roles(chart: &ValidationChart) -> impl Iterator<Item = PointRole> + '_ {
    [
        PointRole::Prediction,
        PointRole::Calibration,
        PointRole::Unknown,
    ]
    .into_iter()
    .filter(|&role| chart.points.iter().any(|p| p.role == role))
}

/// The scatter's legend: the machines, then the marker shapes, the line,
/// the band and the rings, each only where one is drawn.
fn scatter_legend_entries(chart: &ValidationChart, machines: &[&str]) -> Vec<(String, Swatch)> {
    let mut entries: Vec<(String, Swatch)> = machines
        .iter()
        .enumerate()
        .map(|(i, m)| (m.to_string(), Swatch::Machine(i)))
        .collect();
    // Marker shapes, then rings, each only where one is drawn.
    for role in drawn_roles(chart) {
        entries.push((role.describe().to_string(), Swatch::Role(role)));
    }
    entries.push(("simulated = measured".into(), Swatch::Line));
    entries.push((
        format!("±{} % band", short_number(chart.band_pct)),
        Swatch::Band,
    ));
    let outside = chart
        .points
        .iter()
        .filter(|p| p.error_pct().abs() > chart.band_pct);
    for (drawn, label, col) in [
        (
            outside.clone().any(|p| !p.known_miss),
            format!("outside ±{} %", short_number(chart.band_pct)),
            MISS,
        ),
        (
            outside.clone().any(|p| p.known_miss),
            "outside, a documented known miss".to_string(),
            KNOWN_MISS,
        ),
    ] {
        if drawn {
            entries.push((label, Swatch::Ring(col)));
        }
    }
    entries
}

/// The scatter's log-log axes, ticked at chosen values.
type LogLog = Cartesian2d<WithKeyPoints<LogCoord<f64>>, WithKeyPoints<LogCoord<f64>>>;

/// Out of the band: a ring round the point (red, or amber for a
/// documented known miss) and its machine, class and error beside it.
fn draw_scatter_misses(
    c: &mut ChartContext<'_, SVGBackend<'_>, LogLog>,
    plot: &DrawingArea<SVGBackend<'_>, Shift>,
    chart: &ValidationChart,
) -> Result<(), PlotError> {
    let label_style = TextStyle::from((FONT, 12).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for p in chart
        .points
        .iter()
        .filter(|p| p.error_pct().abs() > chart.band_pct)
    {
        let ring = if p.known_miss { KNOWN_MISS } else { MISS };
        c.draw_series(std::iter::once(Circle::new(
            (p.measured, p.simulated),
            9,
            ring.stroke_width(2),
        )))
        .map_err(draw_err)?;
        // Two short lines centred below a point under the diagonal,
        // above one over it: away from the band and the line.
        let lines = [
            format!("{}: {}", p.machine, p.class),
            format!(
                "{}{}, {}",
                pct(p.error_pct()),
                if p.known_miss { " (known miss)" } else { "" },
                p.role.short()
            ),
        ];
        let (px, py) = c.backend_coord(&(p.measured, p.simulated));
        let base = plot.get_base_pixel();
        let centre = label_style.pos(Pos::new(HPos::Center, VPos::Top));
        let first_y = if p.simulated < p.measured {
            py + 14
        } else {
            py - 44
        };
        for (k, text) in lines.into_iter().enumerate() {
            let y = first_y + 15 * k as i32;
            plot.draw(&Text::new(text, (px - base.0, y - base.1), centre.clone()))
                .map_err(draw_err)?;
        }
    }
    Ok(())
}

/// The scatter's legend, by hand right of the plot so it covers no point.
fn draw_scatter_legend(
    legend: &DrawingArea<SVGBackend<'_>, Shift>,
    entries: &[(String, Swatch)],
    band_fill: RGBAColor,
) -> Result<(), PlotError> {
    let style = TextStyle::from((FONT, 13).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let d = |e: Result<(), _>| e.map_err(draw_err);
    for (i, (label, swatch)) in entries.iter().enumerate() {
        let y = 70 + 20 * i as i32;
        match *swatch {
            Swatch::Machine(k) => {
                d(legend.draw(&Circle::new((10, y), 4, color(k).filled())))?;
            }
            Swatch::Role(role) => {
                draw_marker(legend, role, (10, y), 4, RGBColor(90, 90, 90).filled())?;
            }
            Swatch::Line => d(legend.draw(&PathElement::new(
                vec![(0, y), (20, y)],
                BLACK.stroke_width(1),
            )))?,
            Swatch::Band => d(legend.draw(&Rectangle::new(
                [(0, y - 6), (20, y + 6)],
                band_fill.filled(),
            )))?,
            Swatch::Ring(col) => {
                d(legend.draw(&Circle::new((10, y), 7, col.stroke_width(2))))?;
            }
        }
        d(legend.draw(&Text::new(label.as_str(), (28, y), style.clone())))?;
    }
    Ok(())
}

/// Panels of the grid: columns, and the size of one.
const PANEL_COLUMNS: usize = 4;
const PANEL_W: u32 = 460;
/// Room right of each panel's plot for the figures of its classes.
const FIGURES_W: u32 = 160;
const ROW_H: u32 = 22;
/// A line of the key under the panels.
const KEY_LINE_H: i32 = 22;
/// The role markers' colour (the machine has no colour of its own here).
const ROLE_MARK: RGBColor = RGBColor(90, 90, 90);

/// What a key entry of the panels shows.
#[derive(Clone, Copy)]
enum KeySwatch {
    Fill(RGBColor),
    Role(PointRole),
}

/// Per machine a panel (a grid of them, four across, so the chart fits a
/// slide): per class of CPU pairs a bar of the simulated median's error
/// against the measured one, in percent, inside the ±`band_pct` band
/// (shaded); a bar outside it red, a documented known miss amber; each bar
/// with its error and the two medians in ns, one decimal throughout.
pub fn validation_bars(chart: &ValidationChart) -> Result<String, PlotError> {
    check_points(&chart.points)?;
    check_finite("the band", chart.band_pct)?;
    let machines = machines(&chart.points);
    let classes_of = |m: &str| -> Vec<&ValidationPoint> {
        chart.points.iter().filter(|p| p.machine == m).collect()
    };
    // One error scale for every panel: the band and the largest miss.
    let reach = chart
        .points
        .iter()
        .map(|p| p.error_pct().abs())
        .fold(chart.band_pct * 1.5, f64::max)
        * 1.15;
    // Each panel as tall as its classes need, stacked in the column that is
    // shortest so far (the first four fill the top row): no empty rows in
    // a machine with few classes, and the grid as short as it can be.
    let columns = PANEL_COLUMNS.min(machines.len());
    let mut column_h = vec![0u32; columns];
    let mut placed: Vec<(&str, u32, u32, usize)> = Vec::new();
    for m in &machines {
        let classes = classes_of(m).len();
        let column = (0..columns).min_by_key(|&c| (column_h[c], c)).unwrap_or(0);
        placed.push((m, PANEL_W * column as u32, column_h[column], classes));
        column_h[column] += bar_panel_h(classes);
    }
    let grid_h = column_h.iter().copied().max().unwrap_or(0);
    // The key, once for every panel, laid out left to right, a new line
    // where the next would not fit.
    let key_w = (PANEL_W * PANEL_COLUMNS.min(machines.len()) as u32).max(title_width(&chart.title));
    let mut x = 20;
    let mut line = 0;
    let entries: Vec<(String, KeySwatch, (i32, usize))> = bars_key_entries(chart)
        .into_iter()
        .map(|(text, swatch)| {
            let w = 24 + text_width(&text, 13.0) as i32 + 26;
            if x > 20 && x + w > key_w as i32 {
                x = 20;
                line += 1;
            }
            let at = (x, line);
            x += w;
            (text, swatch, at)
        })
        .collect();
    let title_h = 50;
    let legend_h = 18 + KEY_LINE_H as u32 * (line as u32 + 1);
    let width = (PANEL_W * columns as u32).max(title_width(&chart.title));
    let height = title_h + grid_h + legend_h;
    let d = |e: Result<(), _>| e.map_err(draw_err);
    render(width, height, |root| {
        let (top, rest) = root.split_vertically(title_h);
        let (grid, legend) = rest.split_vertically(grid_h);
        let title_style = TextStyle::from((FONT, 20).into_font())
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Center));
        d(top.draw(&Text::new(
            chart.title.as_str(),
            (width as i32 / 2, title_h as i32 / 2),
            title_style,
        )))?;
        for &(m, x, y, classes) in &placed {
            let panel = grid.clone().shrink((x, y), (PANEL_W, bar_panel_h(classes)));
            draw_bar_panel(&panel, m, &classes_of(m), reach, chart.band_pct)?;
        }
        let key = TextStyle::from((FONT, 13).into_font())
            .color(&BLACK)
            .pos(Pos::new(HPos::Left, VPos::Center));
        for (text, swatch, (x, line)) in &entries {
            let y = 21 + KEY_LINE_H * *line as i32;
            match *swatch {
                KeySwatch::Fill(col) => d(legend.draw(&Rectangle::new(
                    [(*x, y - 7), (x + 18, y + 7)],
                    col.filled(),
                )))?,
                KeySwatch::Role(role) => {
                    draw_marker(&legend, role, (x + 9, y), 4, ROLE_MARK.filled())?
                }
            }
            d(legend.draw(&Text::new(text.clone(), (x + 24, y), key.clone())))?;
        }
        Ok(())
    })
}

/// The height of a machine's panel of `classes` bars.
fn bar_panel_h(classes: usize) -> u32 {
    64 + ROW_H * classes as u32 + 34
}

/// The key of the bars, with only the kinds of bar and marker drawn.
fn bars_key_entries(chart: &ValidationChart) -> Vec<(String, KeySwatch)> {
    let outside = |known: bool| {
        chart
            .points
            .iter()
            .any(|p| p.error_pct().abs() > chart.band_pct && p.known_miss == known)
    };
    let within = chart
        .points
        .iter()
        .any(|p| p.error_pct().abs() <= chart.band_pct);
    let mut entries: Vec<(String, KeySwatch)> = [
        (
            within,
            format!("within ±{} %", short_number(chart.band_pct)),
            WITHIN,
        ),
        (
            outside(false),
            format!("outside ±{} %", short_number(chart.band_pct)),
            MISS,
        ),
        (
            outside(true),
            "outside, a documented known miss".into(),
            KNOWN_MISS,
        ),
        (
            true,
            format!(
                "±{} % band; figures: error, simulated / measured median (ns)",
                short_number(chart.band_pct)
            ),
            RGBColor(200, 225, 200),
        ),
    ]
    .into_iter()
    .filter(|(drawn, _, _)| *drawn)
    .map(|(_, text, col)| (text, KeySwatch::Fill(col)))
    .collect();
    for role in drawn_roles(chart) {
        entries.push((role.describe().to_string(), KeySwatch::Role(role)));
    }
    entries
}

/// Machine `m`'s panel: a bar per class (its `points`) on the error
/// scale `-reach..reach`, the ±`band_pct` band shaded, each bar with its
/// class and role marker left of the plot and its figures right of it.
fn draw_bar_panel(
    panel: &DrawingArea<SVGBackend<'_>, Shift>,
    m: &str,
    points: &[&ValidationPoint],
    reach: f64,
    band_pct: f64,
) -> Result<(), PlotError> {
    let d = |e: Result<(), _>| e.map_err(draw_err);
    let small = TextStyle::from((FONT, 11).into_font()).color(&BLACK);
    let label = TextStyle::from((FONT, 12).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Right, VPos::Center));
    let classes = points.len();
    // Room for the class's name and its role's marker.
    let label_w = widest(points.iter().map(|p| p.class.as_str()), 12.0, 60.0) as u32 + 24;
    let mut c = ChartBuilder::on(panel)
        .caption(m, (FONT, 15))
        .margin(8)
        .margin_right(FIGURES_W)
        .x_label_area_size(34)
        .y_label_area_size(label_w)
        .build_cartesian_2d(-reach..reach, 0..(classes as i32))
        .map_err(draw_err)?;
    c.configure_mesh()
        .disable_y_mesh()
        .y_label_formatter(&|_| String::new())
        .x_labels(5)
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(RGBColor(235, 235, 235))
        // The middle and the ends only: a panel is narrow.
        .x_label_formatter(&|v| {
            if v.abs() < 1e-9 {
                "0 %".into()
            } else if v.abs() >= reach / 1.15 * 0.8 {
                format!("{v:+.0} %")
            } else {
                String::new()
            }
        })
        .label_style((FONT, 11))
        .draw()
        .map_err(draw_err)?;
    let band_fill = RGBColor(160, 200, 160).mix(0.35);
    c.draw_series(std::iter::once(Rectangle::new(
        [(-band_pct, 0), (band_pct, classes as i32)],
        band_fill.filled(),
    )))
    .map_err(draw_err)?;
    c.draw_series(std::iter::once(PathElement::new(
        vec![(0.0, 0), (0.0, classes as i32)],
        BLACK.stroke_width(1),
    )))
    .map_err(draw_err)?;
    let base = panel.get_base_pixel();
    for (k, p) in points.iter().enumerate() {
        // Nearest class on top.
        let row = classes as i32 - 1 - k as i32;
        let e = p.error_pct();
        let col = if e.abs() <= band_pct {
            WITHIN
        } else if p.known_miss {
            KNOWN_MISS
        } else {
            MISS
        };
        let (x0, y0) = c.backend_coord(&(0.0, row));
        let (x1, y1) = c.backend_coord(&(e, row + 1));
        let (ya, yb) = (y1.min(y0) + 4, y1.max(y0) - 4);
        d(panel.draw(&Rectangle::new(
            [
                (x0.min(x1) - base.0, ya - base.1),
                (x0.max(x1) - base.0, yb - base.1),
            ],
            col.filled(),
        )))?;
        let (lx, _) = c.backend_coord(&(-reach, row));
        let mid = (ya + yb) / 2 - base.1;
        d(panel.draw(&Text::new(
            p.class.as_str(),
            (lx - base.0 - 18, mid),
            label.clone(),
        )))?;
        // The role's marker, as on the scatter.
        draw_marker(panel, p.role, (lx - base.0 - 9, mid), 4, ROLE_MARK.filled())?;
        // The figures in their column right of the plot.
        let text = format!("{}  {:.1} / {:.1} ns", pct(e), p.simulated, p.measured);
        let (right, _) = c.backend_coord(&(reach, row));
        d(panel.draw(&Text::new(
            text,
            (right - base.0 + 10, mid),
            small.pos(Pos::new(HPos::Left, VPos::Center)),
        )))?;
    }
    Ok(())
}
