//! The measured-figures chart of a case study: each figure the scenario
//! sets against a measurement, as a bar of how far the simulated value is
//! from the measured one in units of the figure's target, inside the band
//! of one target (shaded), so that a reader sees at once which figures
//! hold and how far the others are off.

use super::{check_finite, draw_err, render, title_width, widest, wrap, PlotError, FONT};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One measured figure beside its simulated value.
#[derive(Clone, Debug, PartialEq)]
pub struct TargetRow {
    /// The figure's name, e.g. `[3] consume_stock, spinlock - local_lock`.
    pub label: String,
    /// (simulated - measured) / target: within the target when at most 1
    /// in magnitude. None draws no bar (no target, or no simulated value).
    pub error_in_targets: Option<f64>,
    /// What is written right of the plot, e.g. "16.9 vs 10.2 (target ±2.56)".
    pub figures: String,
}

/// Every measured figure of a scenario, top to bottom in its order.
#[derive(Clone, Debug, PartialEq)]
pub struct TargetsChart {
    pub title: String,
    pub rows: Vec<TargetRow>,
}

/// Bars beyond this many targets are cut at the edge with an arrow (their
/// size is in the figures column): one figure hundreds of targets off
/// would otherwise squeeze every other bar into the band.
const CLIP_TARGETS: f64 = 4.0;
const ROW_H: u32 = 26;
const PLOT_W: u32 = 420;
const WITHIN: RGBColor = RGBColor(60, 120, 180);
const MISS: RGBColor = RGBColor(200, 30, 30);
const NO_TARGET: RGBColor = RGBColor(150, 150, 150);
const BAND: RGBColor = RGBColor(160, 200, 160);

/// The chart as an SVG document.
pub fn targets(chart: &TargetsChart) -> Result<String, PlotError> {
    if chart.rows.is_empty() {
        return Err(PlotError::Empty("the list of measured figures".into()));
    }
    for r in &chart.rows {
        if let Some(e) = r.error_in_targets {
            check_finite(&format!("the error of `{}`", r.label), e)?;
        }
    }
    let largest = chart
        .rows
        .iter()
        .filter_map(|r| r.error_in_targets)
        .fold(0.0, |m: f64, e| m.max(e.abs()));
    // Room for the band and a little beyond it, at most up to the cut.
    let edge = largest.clamp(1.5, CLIP_TARGETS);
    let reach = edge * 1.12;
    let label_w = widest(chart.rows.iter().map(|r| r.label.as_str()), 12.0, 80.0) as u32 + 16;
    // With room for a cut bar's ": +1234 targets".
    let figures_w = widest(chart.rows.iter().map(|r| r.figures.as_str()), 12.0, 0.0) as u32 + 134;
    let n = chart.rows.len();
    let plot_h = ROW_H * n as u32 + 30 + 40;
    let width = (label_w + PLOT_W + figures_w + 20).max(title_width(&chart.title));
    let key = key_entries(chart, edge);
    let key_lines: Vec<Vec<String>> = key
        .iter()
        .map(|(text, _)| wrap(text, 13.0, width as f64 - 60.0))
        .collect();
    let key_h = 16 + 20 * key_lines.iter().map(Vec::len).sum::<usize>() as u32;
    let title_h = 50;
    let height = title_h + plot_h + key_h;
    let d = |e: Result<(), _>| e.map_err(draw_err);
    render(width, height, |root| {
        let (top, rest) = root.split_vertically(title_h);
        let (plot, legend) = rest.split_vertically(plot_h);
        d(top.draw(&Text::new(
            chart.title.as_str(),
            (width as i32 / 2, title_h as i32 / 2),
            TextStyle::from((FONT, 20).into_font())
                .color(&BLACK)
                .pos(Pos::new(HPos::Center, VPos::Center)),
        )))?;
        let mut c = ChartBuilder::on(&plot)
            .margin(10)
            .margin_right(figures_w)
            .x_label_area_size(40)
            .y_label_area_size(label_w)
            .build_cartesian_2d(-reach..reach, 0..(n as i32))
            .map_err(draw_err)?;
        c.configure_mesh()
            .disable_y_mesh()
            .y_label_formatter(&|_| String::new())
            .x_labels(9)
            .light_line_style(WHITE.mix(0.0))
            .bold_line_style(RGBColor(235, 235, 235))
            .x_label_formatter(&|v| {
                if v.abs() < 1e-9 {
                    "0".into()
                } else {
                    format!("{v:+}")
                }
            })
            .x_desc("simulated minus measured, in targets (shaded: within the target)")
            .label_style((FONT, 12))
            .axis_desc_style((FONT, 13))
            .draw()
            .map_err(draw_err)?;
        c.draw_series(std::iter::once(Rectangle::new(
            [(-1.0, 0), (1.0, n as i32)],
            BAND.mix(0.35).filled(),
        )))
        .map_err(draw_err)?;
        c.draw_series(std::iter::once(PathElement::new(
            vec![(0.0, 0), (0.0, n as i32)],
            BLACK.stroke_width(1),
        )))
        .map_err(draw_err)?;
        let base = plot.get_base_pixel();
        let at = |x: f64, row: i32| {
            let (px, py) = c.backend_coord(&(x, row));
            (px - base.0, py - base.1)
        };
        draw_target_rows(&plot, chart, &at, reach, edge)?;
        draw_target_key(&legend, &key, &key_lines)
    })
}

/// A row per figure: its label, its bar (cut with an arrow beyond
/// `edge` targets) and its figures; `at` maps (targets, row) to pixels of
/// `plot`, whose x axis spans `-reach..reach`.
fn draw_target_rows(
    plot: &DrawingArea<SVGBackend<'_>, Shift>,
    chart: &TargetsChart,
    at: &impl Fn(f64, i32) -> (i32, i32),
    reach: f64,
    edge: f64,
) -> Result<(), PlotError> {
    let d = |e: Result<(), _>| e.map_err(draw_err);
    let n = chart.rows.len();
    let label = TextStyle::from((FONT, 12).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Right, VPos::Center));
    let small = TextStyle::from((FONT, 12).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (k, r) in chart.rows.iter().enumerate() {
        // The first figure on top.
        let row = n as i32 - 1 - k as i32;
        let (left, y0) = at(-reach, row);
        let (_, y1) = at(-reach, row + 1);
        let (ya, yb) = (y1.min(y0) + 5, y1.max(y0) - 5);
        let mid = (ya + yb) / 2;
        d(plot.draw(&Text::new(r.label.as_str(), (left - 8, mid), label.clone())))?;
        let (right, _) = at(reach, row);
        // A cut bar's size in targets beside its figures.
        let figures = match r.error_in_targets {
            Some(e) if e.abs() > edge => format!("{}: {e:+.0} targets", r.figures),
            _ => r.figures.clone(),
        };
        d(plot.draw(&Text::new(figures, (right + 12, mid), small.clone())))?;
        let Some(e) = r.error_in_targets else {
            continue;
        };
        let colour = if e.abs() <= 1.0 { WITHIN } else { MISS };
        let shown = e.clamp(-edge, edge);
        let (x0, _) = at(0.0, row);
        let (x1, _) = at(shown, row);
        d(plot.draw(&Rectangle::new(
            [(x0.min(x1), ya), (x0.max(x1).max(x0.min(x1) + 1), yb)],
            colour.filled(),
        )))?;
        if e.abs() > edge {
            // An arrow past the cut, pointing the way the bar goes on.
            let dir = e.signum() as i32;
            let tip = x1 + dir * 12;
            d(plot.draw(&Polygon::new(
                vec![(x1, ya - 2), (tip, mid), (x1, yb + 2)],
                colour.filled(),
            )))?;
        }
    }
    Ok(())
}

/// The key under the plot: a swatch per kind of bar, its text wrapped.
fn draw_target_key(
    legend: &DrawingArea<SVGBackend<'_>, Shift>,
    key: &[(String, RGBColor)],
    key_lines: &[Vec<String>],
) -> Result<(), PlotError> {
    let d = |e: Result<(), _>| e.map_err(draw_err);
    let key_style = TextStyle::from((FONT, 13).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let mut y = 14;
    for ((_, swatch), lines) in key.iter().zip(key_lines) {
        d(legend.draw(&Rectangle::new([(20, y - 7), (38, y + 7)], swatch.filled())))?;
        for line in lines {
            d(legend.draw(&Text::new(line.as_str(), (46, y), key_style.clone())))?;
            y += 20;
        }
    }
    Ok(())
}

/// The key's entries, only the kinds of bar drawn.
fn key_entries(chart: &TargetsChart, edge: f64) -> Vec<(String, RGBColor)> {
    let errors: Vec<f64> = chart
        .rows
        .iter()
        .filter_map(|r| r.error_in_targets)
        .collect();
    let mut out = Vec::new();
    if errors.iter().any(|e| e.abs() <= 1.0) {
        out.push(("within its target".to_string(), WITHIN));
    }
    if errors.iter().any(|e| e.abs() > 1.0) {
        out.push(("outside its target (a miss)".to_string(), MISS));
    }
    let mut band = "the band: one target either side of the measured figure; \
                    figures right: simulated vs measured (target)"
        .to_string();
    if errors.iter().any(|e| e.abs() > edge) {
        band.push_str(&format!(
            "; a bar past {edge} targets is cut with an arrow (its figures give its size)"
        ));
    }
    out.push((band, BAND));
    if chart.rows.iter().any(|r| r.error_in_targets.is_none()) {
        out.push((
            "no bar: the figure has no target or no simulated value".to_string(),
            NO_TARGET,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(label: &str, e: Option<f64>) -> TargetRow {
        TargetRow {
            label: label.into(),
            error_in_targets: e,
            figures: format!("{label} figures"),
        }
    }

    #[test]
    fn draws_every_row_and_says_when_a_bar_is_cut() {
        let chart = TargetsChart {
            title: "case: simulated against measured".into(),
            rows: vec![
                row("[1] near", Some(0.3)),
                row("[2] far", Some(-227.0)),
                row("[3] none", None),
            ],
        };
        let svg = targets(&chart).unwrap();
        for text in [
            "[1] near",
            "[2] far",
            "[3] none",
            "[2] far figures: -227 targets",
        ] {
            assert!(svg.contains(text), "{text} missing");
        }
        assert!(svg.contains("a bar past 4 targets is cut"));
        assert!(svg.contains("outside its target"));
        assert!(svg.contains("no bar: the figure has no target"));
    }

    #[test]
    fn a_chart_within_the_band_draws_no_cut_and_no_miss() {
        let chart = TargetsChart {
            title: "t".into(),
            rows: vec![row("[1] a", Some(0.5)), row("[2] b", Some(-0.9))],
        };
        let svg = targets(&chart).unwrap();
        assert!(!svg.contains("is cut"));
        assert!(!svg.contains("outside its target"));
        assert!(svg.contains("within its target"));
    }

    #[test]
    fn rejects_an_empty_chart_and_a_non_finite_error() {
        let empty = TargetsChart {
            title: "t".into(),
            rows: vec![],
        };
        assert!(matches!(targets(&empty), Err(PlotError::Empty(_))));
        let nan = TargetsChart {
            title: "t".into(),
            rows: vec![row("[1] a", Some(f64::NAN))],
        };
        assert!(matches!(targets(&nan), Err(PlotError::Invalid(_))));
    }
}
