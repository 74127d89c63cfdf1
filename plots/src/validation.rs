//! The validation charts: measured against simulated latency per class of
//! CPU pairs, per machine.

use super::{
    check_finite, color, draw_err, hbars, label_area_for, render, short_number, text_width,
    title_width, PlotError, FONT,
};
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
    // Ticks at 1, 2 and 5 times the powers of ten inside the range (plotters'
    // own log ticks can write one value twice).
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
    let machines = machines(&chart.points);
    let mut entries: Vec<String> = machines.iter().map(|m| m.to_string()).collect();
    entries.push("simulated = measured".into());
    entries.push(format!("±{} % band", short_number(chart.band_pct)));
    let legend_w = entries
        .iter()
        .map(|e| text_width(e, 13.0))
        .fold(0.0, f64::max) as u32
        + 50;
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
            let col = color(i);
            c.draw_series(
                chart
                    .points
                    .iter()
                    .filter(|p| p.machine == *m)
                    .map(|p| Circle::new((p.measured, p.simulated), 4, col.filled())),
            )
            .map_err(draw_err)?;
        }
        // The legend, by hand right of the plot so it covers no point.
        let style = TextStyle::from((FONT, 13).into_font())
            .color(&BLACK)
            .pos(Pos::new(HPos::Left, VPos::Center));
        let d = |e: Result<(), _>| e.map_err(draw_err);
        for (i, label) in entries.iter().enumerate() {
            let y = 70 + 20 * i as i32;
            if i < machines.len() {
                d(legend.draw(&Circle::new((10, y), 4, color(i).filled())))?;
            } else if i == machines.len() {
                d(legend.draw(&PathElement::new(
                    vec![(0, y), (20, y)],
                    BLACK.stroke_width(1),
                )))?;
            } else {
                d(legend.draw(&Rectangle::new(
                    [(0, y - 6), (20, y + 6)],
                    band_fill.filled(),
                )))?;
            }
            d(legend.draw(&Text::new(label.as_str(), (28, y), style.clone())))?;
        }
        Ok(())
    })
}

/// Measured and simulated side by side per machine and class (one bar
/// each, the value written at its end), as an SVG document.
pub fn validation_bars(chart: &ValidationChart) -> Result<String, PlotError> {
    check_points(&chart.points)?;
    let names: Vec<String> = chart
        .points
        .iter()
        .map(|p| format!("{}: {}", p.machine, p.class))
        .collect();
    let series = vec![
        (
            "measured".to_string(),
            chart.points.iter().map(|p| p.measured).collect::<Vec<_>>(),
        ),
        (
            "simulated".to_string(),
            chart.points.iter().map(|p| p.simulated).collect(),
        ),
    ];
    let label_area = label_area_for(&names);
    let height = 150 + 6 * 9 * chart.points.len() as u32;
    let width = (label_area + 760).max(900).max(title_width(&chart.title));
    let fmt = |v: f64| short_number(v);
    render(width, height, |root| {
        hbars(
            root,
            &chart.title,
            &chart.x_label,
            "machine: class of CPU pairs",
            &names,
            &series,
            Some(&fmt),
            label_area,
        )
    })
}
