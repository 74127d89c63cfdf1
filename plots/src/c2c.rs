//! The per-line view in the style of `perf c2c`'s "Shared Data Cache Line
//! Table" and its per-offset detail, as a chart: per hot line a panel, per
//! byte offset in it a row with two stacked bars, the HITM there (local and
//! remote) and the accesses there (loads, stores, atomics), and under each
//! line's heading the CPUs and nodes that touched it.

use super::FONT;
use super::{check_finite, draw_err, render, short_number, text_width, title_width, PlotError};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// What the accesses at one offset of a line did.
#[derive(Clone, Debug, PartialEq)]
pub struct C2cOffset {
    /// The row's label, e.g. "0x8 shared.value".
    pub label: String,
    pub hitm_local: f64,
    pub hitm_remote: f64,
    pub loads: f64,
    pub stores: f64,
    pub atomics: f64,
}

/// One hot line: a panel.
#[derive(Clone, Debug, PartialEq)]
pub struct C2cLine {
    /// e.g. "spinlock: line 0 at 0x1000 (home node 0), 98.2 % of HITM".
    pub heading: String,
    /// e.g. "touched by 16 CPUs (0-15) on node 0".
    pub touched_by: String,
    /// Top to bottom.
    pub offsets: Vec<C2cOffset>,
}

/// The hot lines, top to bottom, with one bar scale per column across every
/// panel (so a cooler line looks cooler).
#[derive(Clone, Debug, PartialEq)]
pub struct C2cChart {
    pub title: String,
    /// What the counts are, e.g. "per iteration".
    pub unit: String,
    pub lines: Vec<C2cLine>,
}

const HITM_LOCAL: RGBColor = RGBColor(170, 20, 20);
const HITM_REMOTE: RGBColor = RGBColor(240, 140, 40);
const LOADS: RGBColor = RGBColor(50, 110, 180);
const STORES: RGBColor = RGBColor(60, 160, 90);
const ATOMICS: RGBColor = RGBColor(140, 80, 170);

/// Pixels: a row per offset, a column's longest bar, the figures after it.
const ROW_H: i32 = 22;
const BAR_W: i32 = 300;
const FIGURES_W: i32 = 170;
const HEADING_H: i32 = 42;
const PANEL_GAP: i32 = 16;

/// The per-line chart as an SVG document.
pub fn c2c_lines(chart: &C2cChart) -> Result<String, PlotError> {
    check_c2c(chart)?;
    let offsets = || chart.lines.iter().flat_map(|l| &l.offsets);
    let label_w = offsets()
        .map(|o| text_width(&o.label, 12.0) as i32)
        .fold(90, i32::max)
        + 16;
    let hitm_x = 20 + label_w;
    let access_x = hitm_x + BAR_W + FIGURES_W;
    // One scale per column for the whole chart; at least 1 so an empty
    // column draws no bars rather than dividing by zero.
    let columns = Columns {
        hitm_x,
        access_x,
        hitm_max: offsets()
            .map(|o| o.hitm_local + o.hitm_remote)
            .fold(1.0, f64::max),
        access_max: offsets()
            .map(|o| o.loads + o.stores + o.atomics)
            .fold(1.0, f64::max),
    };
    let body_w = access_x + BAR_W + FIGURES_W;
    let headings_w = chart
        .lines
        .iter()
        .map(|l| text_width(&l.heading, 14.0).max(text_width(&l.touched_by, 12.0)) as i32 + 40)
        .max()
        .unwrap_or(0);
    let key = c2c_key(chart);
    let key_w = key
        .iter()
        .map(|(t, _)| 24 + text_width(t, 13.0) as i32 + 22)
        .sum::<i32>()
        + 40;
    let width = body_w
        .max(headings_w)
        .max(key_w)
        .max(title_width(&chart.title) as i32) as u32;
    let top = 50 + 26 + 24; // title, key, column headings
    let panels_h: i32 = chart
        .lines
        .iter()
        .map(|l| HEADING_H + ROW_H * l.offsets.len() as i32 + PANEL_GAP)
        .sum();
    let height = (top + panels_h + 10) as u32;
    let d = |e: Result<(), _>| e.map_err(draw_err);
    render(width, height, |root| {
        d(root.draw(&Text::new(
            chart.title.as_str(),
            (width as i32 / 2, 24),
            c2c_text(20, HPos::Center),
        )))?;
        // The key, under the title.
        let mut x = 20;
        for &(label, col) in &key {
            d(root.draw(&Rectangle::new([(x, 57), (x + 18, 71)], col.filled())))?;
            d(root.draw(&Text::new(label, (x + 24, 64), c2c_text(13, HPos::Left))))?;
            x += 24 + text_width(label, 13.0) as i32 + 22;
        }
        let grey = c2c_grey();
        for (x, heading) in [
            (hitm_x, format!("HITM {} (local + remote)", chart.unit)),
            (
                access_x,
                format!("accesses {} (loads + stores + atomics)", chart.unit),
            ),
        ] {
            d(root.draw(&Text::new(heading, (x, top - 12), grey.clone())))?;
        }
        d(root.draw(&Text::new(
            "offset, field",
            (hitm_x - 12, top - 12),
            grey.pos(Pos::new(HPos::Right, VPos::Center)),
        )))?;
        let mut y = top;
        for l in &chart.lines {
            d(root.draw(&PathElement::new(
                vec![(10, y), (width as i32 - 10, y)],
                RGBColor(200, 200, 200).stroke_width(1),
            )))?;
            d(root.draw(&Text::new(
                l.heading.as_str(),
                (20, y + 12),
                c2c_text(14, HPos::Left),
            )))?;
            d(root.draw(&Text::new(
                l.touched_by.as_str(),
                (20, y + 30),
                grey.clone(),
            )))?;
            y += HEADING_H;
            for o in &l.offsets {
                draw_c2c_offset(root, &columns, o, y)?;
                y += ROW_H;
            }
            y += PANEL_GAP;
        }
        Ok(())
    })
}

/// Refuses a chart without lines, a line without offsets, or a count
/// that is not a finite non-negative number.
fn check_c2c(chart: &C2cChart) -> Result<(), PlotError> {
    if chart.lines.is_empty() {
        return Err(PlotError::Empty("the list of lines".into()));
    }
    for l in &chart.lines {
        if l.offsets.is_empty() {
            return Err(PlotError::Empty(format!("the offsets of `{}`", l.heading)));
        }
        for o in &l.offsets {
            for v in [o.hitm_local, o.hitm_remote, o.loads, o.stores, o.atomics] {
                check_finite(&format!("a count of `{}`", o.label), v)?;
                if v < 0.0 {
                    return Err(PlotError::Invalid(format!(
                        "a count of `{}` is negative",
                        o.label
                    )));
                }
            }
        }
    }
    Ok(())
}

/// The key: only the kinds some offset has.
fn c2c_key(chart: &C2cChart) -> Vec<(&'static str, RGBColor)> {
    let offsets = || chart.lines.iter().flat_map(|l| &l.offsets);
    [
        (
            "HITM, local node",
            HITM_LOCAL,
            offsets().any(|o| o.hitm_local > 0.0),
        ),
        (
            "HITM, remote node",
            HITM_REMOTE,
            offsets().any(|o| o.hitm_remote > 0.0),
        ),
        ("loads", LOADS, offsets().any(|o| o.loads > 0.0)),
        ("stores", STORES, offsets().any(|o| o.stores > 0.0)),
        ("atomics", ATOMICS, offsets().any(|o| o.atomics > 0.0)),
    ]
    .into_iter()
    .filter(|k| k.2)
    .map(|(label, col, _)| (label, col))
    .collect()
}

/// The chart's black text, centred vertically.
fn c2c_text(size: u32, h: HPos) -> TextStyle<'static> {
    TextStyle::from((FONT, size).into_font())
        .color(&BLACK)
        .pos(Pos::new(h, VPos::Center))
}

/// The chart's grey text (column heads, who touched a line).
fn c2c_grey() -> TextStyle<'static> {
    TextStyle::from((FONT, 12).into_font())
        .color(&RGBColor(80, 80, 80))
        .pos(Pos::new(HPos::Left, VPos::Center))
}

/// Where the two columns of bars start, and the count each one's longest
/// bar stands for.
struct Columns {
    hitm_x: i32,
    access_x: i32,
    hitm_max: f64,
    access_max: f64,
}

/// One offset's row from `y`: its label, its HITM and accesses as stacked
/// bars, each followed by its figures.
fn draw_c2c_offset(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    columns: &Columns,
    o: &C2cOffset,
    y: i32,
) -> Result<(), PlotError> {
    let d = |e: Result<(), _>| e.map_err(draw_err);
    let mid = y + ROW_H / 2;
    d(root.draw(&Text::new(
        o.label.as_str(),
        (columns.hitm_x - 12, mid),
        c2c_text(12, HPos::Right),
    )))?;
    let (hitm_bars, hitm_end) = stacked_bar(
        columns.hitm_x,
        y,
        columns.hitm_max,
        &[(o.hitm_local, HITM_LOCAL), (o.hitm_remote, HITM_REMOTE)],
    );
    let (access_bars, access_end) = stacked_bar(
        columns.access_x,
        y,
        columns.access_max,
        &[(o.loads, LOADS), (o.stores, STORES), (o.atomics, ATOMICS)],
    );
    for bar in hitm_bars.iter().chain(&access_bars) {
        d(root.draw(bar))?;
    }
    d(root.draw(&Text::new(
        format!(
            "{} + {}",
            short_number(o.hitm_local),
            short_number(o.hitm_remote)
        ),
        (hitm_end + 6, mid),
        c2c_text(11, HPos::Left),
    )))?;
    d(root.draw(&Text::new(
        format!(
            "{} + {} + {}",
            short_number(o.loads),
            short_number(o.stores),
            short_number(o.atomics)
        ),
        (access_end + 6, mid),
        c2c_text(11, HPos::Left),
    )))
}

/// A bar from `x0` in the row at `y`, a segment per part, `max` the full
/// width: its rectangles and where it ends.
fn stacked_bar(
    x0: i32,
    y: i32,
    max: f64,
    parts: &[(f64, RGBColor)],
) -> (Vec<Rectangle<(i32, i32)>>, i32) {
    let mut x = x0 as f64;
    let mut out = Vec::new();
    for &(v, col) in parts {
        let w = v / max * BAR_W as f64;
        if w > 0.0 {
            // At least a pixel: a count is never invisible.
            let x1 = x + w.max(1.0);
            out.push(Rectangle::new(
                [
                    (x.round() as i32, y + 4),
                    (x1.round() as i32, y + ROW_H - 4),
                ],
                col.filled(),
            ));
            x = x1;
        }
    }
    (out, x.round() as i32)
}
