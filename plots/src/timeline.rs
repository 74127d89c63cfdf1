//! The timeline: a sequence diagram of coherence messages between CPUs and
//! the directories (homes), one lane each, time going down.
//!
//! Each message has a row of its own, so no two labels share a line of
//! text; the rows of one transaction sit in a shaded band under a caption,
//! and each row starts with the cycles the message is sent and arrives at.
//!
//! A CPU's misses in flight at once (loads whose cycles overlap, the CPU
//! having gone on past the earlier ones) are joined in the left margin: a
//! bar in the CPU's colour from the first of them to the last, with a dot
//! at each, and a label saying how many overlap.

use super::{draw_err, render, text_width, title_width, PlotError, FONT};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// What a message does, for its colour and the legend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageKind {
    /// A request from the requester to the directory (or the L3's tags).
    Request,
    /// The directory asks the cache holding the line to send it on.
    Forward,
    /// The directory asks a cache to drop its copy.
    Invalidate,
    /// A cache confirms it dropped its copy (or that the request is granted).
    Ack,
    /// The line's data.
    Data,
}

impl MessageKind {
    const ALL: [MessageKind; 5] = [
        MessageKind::Request,
        MessageKind::Forward,
        MessageKind::Invalidate,
        MessageKind::Ack,
        MessageKind::Data,
    ];

    fn describe(self) -> &'static str {
        match self {
            MessageKind::Request => "request",
            MessageKind::Forward => "forward",
            MessageKind::Invalidate => "invalidate",
            MessageKind::Ack => "acknowledgement",
            MessageKind::Data => "data",
        }
    }

    fn color(self) -> RGBColor {
        match self {
            MessageKind::Request => RGBColor(31, 119, 180),
            MessageKind::Forward => RGBColor(148, 103, 189),
            MessageKind::Invalidate => RGBColor(214, 39, 40),
            MessageKind::Ack => RGBColor(127, 127, 127),
            MessageKind::Data => RGBColor(44, 160, 44),
        }
    }
}

/// One message: from a lane to another, sent and arriving at a cycle.
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    pub from: usize,
    pub to: usize,
    pub send_cycle: u64,
    pub arrive_cycle: u64,
    pub kind: MessageKind,
    /// Short, written above the arrow (`GetM`, `Data (M)`).
    pub label: String,
}

/// One coherence transaction: a caption and its messages in time order.
#[derive(Clone, Debug, PartialEq)]
pub struct Transaction {
    pub caption: String,
    pub messages: Vec<Message>,
    /// For a CPU's load: its lane and its cycles from issue to arrival, so
    /// that the chart can join the loads of one CPU in flight at once.
    pub load: Option<LoadSpan>,
}

/// A load's requester lane and its cycles, issue to arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadSpan {
    pub lane: usize,
    pub issued_cycle: u64,
    pub done_cycle: u64,
}

/// A group of one lane's loads in flight at once: the transactions' indices
/// (in chart order) and the lane.
#[derive(Clone, Debug, PartialEq, Eq)]
struct OverlapGroup {
    lane: usize,
    members: Vec<usize>,
}

/// The loads of each lane whose cycles overlap (joined through each
/// other: a load overlapping one of the group belongs to it), groups of two
/// or more, in order of their first transaction.
fn overlap_groups(transactions: &[Transaction]) -> Vec<OverlapGroup> {
    let mut loads: Vec<(usize, LoadSpan)> = transactions
        .iter()
        .enumerate()
        .filter_map(|(n, t)| t.load.map(|l| (n, l)))
        .collect();
    loads.sort_by_key(|&(n, l)| (l.lane, l.issued_cycle, n));
    let mut groups: Vec<OverlapGroup> = Vec::new();
    let mut open: Option<(usize, u64, Vec<usize>)> = None;
    for (n, l) in loads {
        match &mut open {
            Some((lane, end, members)) if *lane == l.lane && l.issued_cycle < *end => {
                *end = (*end).max(l.done_cycle);
                members.push(n);
            }
            _ => {
                if let Some((lane, _, members)) = open.take() {
                    if members.len() > 1 {
                        groups.push(OverlapGroup { lane, members });
                    }
                }
                open = Some((l.lane, l.done_cycle, vec![n]));
            }
        }
    }
    if let Some((lane, _, members)) = open {
        if members.len() > 1 {
            groups.push(OverlapGroup { lane, members });
        }
    }
    for g in &mut groups {
        g.members.sort_unstable();
    }
    groups.sort_by_key(|g| g.members[0]);
    groups
}

/// Margin columns for the groups: a group takes the first column whose
/// groups all end (in chart order) before it starts. Returns each group's
/// column and how many columns there are.
fn overlap_columns(groups: &[OverlapGroup]) -> (Vec<usize>, usize) {
    let mut last_in_column: Vec<usize> = Vec::new();
    let columns = groups
        .iter()
        .map(|g| {
            let (first, last) = (g.members[0], *g.members.last().expect("two or more"));
            match last_in_column.iter().position(|&end| end < first) {
                Some(c) => {
                    last_in_column[c] = last;
                    c
                }
                None => {
                    last_in_column.push(last);
                    last_in_column.len() - 1
                }
            }
        })
        .collect();
    (columns, last_in_column.len())
}

/// A lane's colour for its overlap bars.
fn lane_color(lane: usize) -> RGBColor {
    const COLORS: [RGBColor; 6] = [
        RGBColor(230, 120, 20),
        RGBColor(23, 140, 160),
        RGBColor(200, 60, 140),
        RGBColor(120, 150, 30),
        RGBColor(90, 90, 200),
        RGBColor(150, 100, 60),
    ];
    COLORS[lane % COLORS.len()]
}

#[derive(Clone, Debug, PartialEq)]
pub struct TimelineChart {
    pub title: String,
    /// A line under the title (what is drawn, what is left out).
    pub subtitle: String,
    /// Lane names, left to right (CPUs, then directories).
    pub lanes: Vec<String>,
    pub transactions: Vec<Transaction>,
}

/// The timeline as an SVG document.
pub fn timeline(chart: &TimelineChart) -> Result<String, PlotError> {
    check_timeline(chart)?;
    let groups = overlap_groups(&chart.transactions);
    let (group_columns, columns) = overlap_columns(&groups);
    // The margin for the overlap bars: a column each, and room for the
    // label beside the last column's bar.
    let margin = if columns > 0 {
        14 * columns as i32 + 10
    } else {
        0
    };
    let gutter = 150 + margin;
    let lane_w = chart
        .lanes
        .iter()
        .map(|l| text_width(l, 13.0))
        .chain(
            chart
                .transactions
                .iter()
                .flat_map(|t| t.messages.iter().map(|m| text_width(&m.label, 12.0))),
        )
        .fold(150.0, f64::max) as i32
        + 30;
    // A lane's cell is `lane_w` wide, the lifeline in its middle; one more
    // half cell right of the last lane holds the labels of messages a last
    // lane sends itself.
    let lanes_w = lane_w * chart.lanes.len() as i32 + lane_w / 2;
    // A group's label follows its first caption.
    let captions_w = chart
        .transactions
        .iter()
        .enumerate()
        .map(|(n, t)| {
            let label = if groups.iter().any(|g| g.members[0] == n) {
                text_width("99 loads of CPUs 99,99 (core 99) in flight at once", 12.0) + 12.0
            } else {
                0.0
            };
            text_width(&t.caption, 12.0) + label
        })
        .fold(0.0, f64::max) as i32;
    // The legend shows the kinds drawn, no others.
    let kinds: Vec<MessageKind> = MessageKind::ALL
        .into_iter()
        .filter(|k| {
            chart
                .transactions
                .iter()
                .any(|t| t.messages.iter().any(|m| m.kind == *k))
        })
        .collect();
    let legend_w = kinds.len() as i32 * 150;
    let width = (gutter + lanes_w + 20)
        .max(captions_w + 40 + margin)
        .max(legend_w + 40)
        .max(text_width(&chart.subtitle, 14.0) as i32 + 40)
        .max(title_width(&chart.title) as i32);
    let mut frame = Frame {
        margin,
        gutter,
        lane_w,
        width,
        height: 0,
        top: 130,
        caption_h: 22,
        row_h: 26,
        band_gap: 8,
    };
    let rows: i32 = chart
        .transactions
        .iter()
        .map(|t| frame.band_h(t) + frame.band_gap)
        .sum();
    frame.height = frame.top + rows + 30;
    render(width as u32, frame.height as u32, |root| {
        draw_heads(root, &frame, chart, &kinds)?;
        draw_bands_and_lifelines(root, &frame, chart)?;
        draw_overlap_bars(root, &frame, chart, &groups, &group_columns)?;
        let mut y = frame.top;
        for t in &chart.transactions {
            draw_transaction(root, &frame, t, y)?;
            y += frame.band_h(t) + frame.band_gap;
        }
        Ok(())
    })
}

/// Refuses a timeline without lanes or transactions, or with a message
/// between lanes it lacks or arriving before it is sent.
fn check_timeline(chart: &TimelineChart) -> Result<(), PlotError> {
    if chart.lanes.is_empty() {
        return Err(PlotError::Empty("the list of lanes".into()));
    }
    if chart.transactions.is_empty() {
        return Err(PlotError::Empty("the list of transactions".into()));
    }
    for t in &chart.transactions {
        for m in &t.messages {
            if m.from >= chart.lanes.len() || m.to >= chart.lanes.len() {
                return Err(PlotError::Invalid(format!(
                    "message `{}` names a lane beyond the {} lanes",
                    m.label,
                    chart.lanes.len()
                )));
            }
            if m.arrive_cycle < m.send_cycle {
                return Err(PlotError::Invalid(format!(
                    "message `{}` arrives before it is sent",
                    m.label
                )));
            }
        }
    }
    Ok(())
}

/// Where the timeline's parts are, in pixels.
struct Frame {
    /// Left of the captions: the overlap bars' columns.
    margin: i32,
    /// Left of the first lane: the margin and the cycles column.
    gutter: i32,
    lane_w: i32,
    width: i32,
    height: i32,
    /// The first transaction's band.
    top: i32,
    caption_h: i32,
    row_h: i32,
    band_gap: i32,
}

impl Frame {
    /// The x of lane `i`'s lifeline.
    fn lane_x(&self, i: usize) -> i32 {
        self.gutter + self.lane_w * i as i32 + self.lane_w / 2
    }

    /// A transaction's band: its caption and a row per message.
    fn band_h(&self, t: &Transaction) -> i32 {
        self.caption_h + self.row_h * t.messages.len() as i32
    }
}

/// The timeline's text style, centred vertically.
fn timeline_text(size: i32, h: HPos, color: RGBColor) -> TextStyle<'static> {
    let mut style = TextStyle::from((FONT, size).into_font()).pos(Pos::new(h, VPos::Center));
    style.color = color.to_backend_color();
    style
}

/// The title, the subtitle, the legend (one arrow per kind of message
/// drawn) and the column heads.
fn draw_heads(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    frame: &Frame,
    chart: &TimelineChart,
    kinds: &[MessageKind],
) -> Result<(), PlotError> {
    let d = |e: Result<(), _>| e.map_err(draw_err);
    let width = frame.width;
    d(root.draw(&Text::new(
        chart.title.as_str(),
        (width / 2, 22),
        timeline_text(22, HPos::Center, BLACK),
    )))?;
    d(root.draw(&Text::new(
        chart.subtitle.as_str(),
        (width / 2, 48),
        timeline_text(14, HPos::Center, BLACK),
    )))?;
    // Legend: one arrow per kind of message.
    for (k, kind) in kinds.iter().enumerate() {
        let x = 20 + 150 * k as i32;
        let y = 74;
        draw_arrow(root, x, x + 30, y, kind.color())?;
        d(root.draw(&Text::new(
            kind.describe(),
            (x + 38, y),
            timeline_text(12, HPos::Left, BLACK),
        )))?;
    }
    // Column heads.
    d(root.draw(&Text::new(
        "cycle sent → arrived",
        (frame.gutter - 10, frame.top - 14),
        timeline_text(12, HPos::Right, BLACK),
    )))?;
    for (i, lane) in chart.lanes.iter().enumerate() {
        d(root.draw(&Text::new(
            lane.as_str(),
            (frame.lane_x(i), frame.top - 14),
            timeline_text(13, HPos::Center, BLACK),
        )))?;
    }
    Ok(())
}

/// Every other transaction's band shaded, then the lifelines over them
/// (the messages come after, over both).
fn draw_bands_and_lifelines(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    frame: &Frame,
    chart: &TimelineChart,
) -> Result<(), PlotError> {
    let d = |e: Result<(), _>| e.map_err(draw_err);
    let mut y = frame.top;
    for (n, t) in chart.transactions.iter().enumerate() {
        let band_h = frame.band_h(t);
        if n % 2 == 0 {
            d(root.draw(&Rectangle::new(
                [(10, y), (frame.width - 10, y + band_h)],
                RGBColor(244, 246, 250).filled(),
            )))?;
        }
        y += band_h + frame.band_gap;
    }
    for i in 0..chart.lanes.len() {
        d(root.draw(&PathElement::new(
            vec![
                (frame.lane_x(i), frame.top),
                (frame.lane_x(i), frame.height - 20),
            ],
            RGBColor(170, 170, 170).stroke_width(1),
        )))?;
    }
    Ok(())
}

/// Each group of overlapping loads: a bar in its lane's colour through
/// its members' captions, a dot at each, and its count beside the first.
fn draw_overlap_bars(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    frame: &Frame,
    chart: &TimelineChart,
    groups: &[OverlapGroup],
    group_columns: &[usize],
) -> Result<(), PlotError> {
    let d = |e: Result<(), _>| e.map_err(draw_err);
    // Where each transaction's caption sits, for the overlap bars.
    let mut caption_y = Vec::with_capacity(chart.transactions.len());
    let mut y = frame.top;
    for t in &chart.transactions {
        caption_y.push(y + frame.caption_h / 2);
        y += frame.band_h(t) + frame.band_gap;
    }
    for (g, &column) in groups.iter().zip(group_columns) {
        let x = 14 + 14 * column as i32;
        let color = lane_color(g.lane);
        let (first, last) = (
            caption_y[g.members[0]],
            caption_y[*g.members.last().expect("two or more")],
        );
        d(root.draw(&PathElement::new(
            vec![(x, first), (x, last)],
            color.stroke_width(3),
        )))?;
        for &n in &g.members {
            d(root.draw(&Circle::new((x, caption_y[n]), 4, color.filled())))?;
        }
        // Its count, beside the bar's top, in the caption's line.
        let caption = &chart.transactions[g.members[0]].caption;
        d(root.draw(&Text::new(
            format!(
                "{} loads of {} in flight at once",
                g.members.len(),
                chart.lanes[g.lane]
            ),
            (frame.margin + 32 + text_width(caption, 12.0) as i32, first),
            timeline_text(12, HPos::Left, color),
        )))?;
    }
    Ok(())
}

/// One transaction's band from `y`: its caption, then a row per message
/// with its cycles, its arrow and its label.
fn draw_transaction(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    frame: &Frame,
    t: &Transaction,
    y: i32,
) -> Result<(), PlotError> {
    let d = |e: Result<(), _>| e.map_err(draw_err);
    let (caption_h, row_h) = (frame.caption_h, frame.row_h);
    d(root.draw(&Text::new(
        t.caption.as_str(),
        (20 + frame.margin, y + caption_h / 2),
        timeline_text(12, HPos::Left, RGBColor(60, 60, 60)),
    )))?;
    let mut row = y + caption_h;
    for m in &t.messages {
        let mid = row + row_h / 2;
        d(root.draw(&Text::new(
            format!("{} → {}", m.send_cycle, m.arrive_cycle),
            (frame.gutter - 10, mid + 4),
            timeline_text(12, HPos::Right, BLACK),
        )))?;
        let (x0, x1) = (frame.lane_x(m.from), frame.lane_x(m.to));
        let arrow_y = mid + 7;
        if x0 == x1 {
            // A message to oneself: a short loop to the right.
            d(root.draw(&PathElement::new(
                vec![
                    (x0, arrow_y - 6),
                    (x0 + 24, arrow_y - 6),
                    (x0 + 24, arrow_y),
                ],
                m.kind.color().stroke_width(2),
            )))?;
            draw_arrow(root, x0 + 24, x0, arrow_y, m.kind.color())?;
        } else {
            draw_arrow(root, x0, x1, arrow_y, m.kind.color())?;
        }
        // The label above the arrow, in the gap between the
        // sender's lifeline and the next one towards the receiver,
        // which is wider than any label: it never crosses a lifeline.
        let cx = label_centre_x(frame.gutter, frame.lane_w, m.from, m.to);
        d(root.draw(&Text::new(
            m.label.as_str(),
            (cx, mid - 4),
            timeline_text(12, HPos::Center, m.kind.color()),
        )))?;
        row += row_h;
    }
    Ok(())
}

/// The x of a label's centre: the middle of the gap between the sender's
/// lane and its neighbour towards the receiver (the right one for a message
/// to the sender itself). Lifelines stand at `gutter + lane_w * (i + 1/2)`,
/// so the gap's middle is `gutter + lane_w * (i + 1)`, `lane_w / 2` from
/// either lifeline, and `lane_w` is at least a label's width plus 30.
fn label_centre_x(gutter: i32, lane_w: i32, from: usize, to: usize) -> i32 {
    let gap = if to < from { from - 1 } else { from };
    gutter + lane_w * (gap as i32 + 1)
}

fn draw_arrow(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    x0: i32,
    x1: i32,
    y: i32,
    color: RGBColor,
) -> Result<(), PlotError> {
    let d = |e: Result<(), _>| e.map_err(draw_err);
    d(root.draw(&PathElement::new(
        vec![(x0, y), (x1, y)],
        color.stroke_width(2),
    )))?;
    let dir = if x1 >= x0 { -1 } else { 1 };
    d(root.draw(&Polygon::new(
        vec![(x1, y), (x1 + dir * 9, y - 5), (x1 + dir * 9, y + 5)],
        color.filled(),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_sits_between_two_lifelines_whatever_the_message() {
        let (gutter, lane_w) = (150, 200);
        let half_label = (lane_w - 30) / 2;
        let lifeline = |i: usize| gutter + lane_w * i as i32 + lane_w / 2;
        let lanes = 5;
        for from in 0..lanes {
            for to in 0..lanes {
                let cx = label_centre_x(gutter, lane_w, from, to);
                let (left, right) = (cx - half_label, cx + half_label);
                for i in 0..lanes {
                    let x = lifeline(i);
                    assert!(
                        x < left || x > right,
                        "message {from}->{to}: label {left}..{right} crosses lifeline {i} at {x}"
                    );
                }
                // Next to the sender, on the receiver's side.
                let sender = lifeline(from);
                assert_eq!((cx - sender).abs(), lane_w / 2);
                if to < from {
                    assert!(cx < sender);
                } else {
                    assert!(cx > sender);
                }
            }
        }
    }

    #[test]
    fn the_legend_names_only_the_kinds_drawn() {
        let chart = TimelineChart {
            title: "t".into(),
            subtitle: "s".into(),
            lanes: vec!["CPU 0".into(), "memory node 0".into()],
            transactions: vec![Transaction {
                caption: "c".into(),
                messages: vec![
                    Message {
                        from: 0,
                        to: 1,
                        send_cycle: 0,
                        arrive_cycle: 10,
                        kind: MessageKind::Request,
                        label: "GetS".into(),
                    },
                    Message {
                        from: 1,
                        to: 0,
                        send_cycle: 10,
                        arrive_cycle: 20,
                        kind: MessageKind::Data,
                        label: "Data (DRAM)".into(),
                    },
                ],
                load: None,
            }],
        };
        let svg = timeline(&chart).unwrap();
        assert!(svg.contains("\nrequest\n"), "{svg}");
        assert!(svg.contains("\ndata\n"));
        for absent in ["\nforward\n", "\ninvalidate\n", "\nacknowledgement\n"] {
            assert!(!svg.contains(absent), "{absent} in the legend");
        }
    }

    fn load(lane: usize, issued_cycle: u64, done_cycle: u64) -> Transaction {
        Transaction {
            caption: format!("load {issued_cycle}-{done_cycle}"),
            messages: vec![Message {
                from: lane,
                to: 2,
                send_cycle: issued_cycle,
                arrive_cycle: done_cycle,
                kind: MessageKind::Request,
                label: "GetS".into(),
            }],
            load: Some(LoadSpan {
                lane,
                issued_cycle,
                done_cycle,
            }),
        }
    }

    #[test]
    fn a_lanes_overlapping_loads_are_grouped_and_others_not() {
        let transactions = vec![
            load(0, 0, 100),
            load(1, 10, 50),
            // Overlaps the first (through it, the third joins too).
            load(0, 50, 200),
            load(0, 150, 300),
            // After the group: alone.
            load(0, 300, 400),
            load(1, 60, 90),
        ];
        let groups = overlap_groups(&transactions);
        assert_eq!(
            groups,
            vec![OverlapGroup {
                lane: 0,
                members: vec![0, 2, 3]
            }]
        );
        // Two groups whose bands interleave take two columns; one after
        // another shares a column.
        let interleaved = vec![
            load(0, 0, 100),
            load(1, 0, 100),
            load(0, 50, 150),
            load(1, 50, 150),
            load(0, 500, 600),
            load(0, 550, 650),
        ];
        let groups = overlap_groups(&interleaved);
        assert_eq!(groups.len(), 3);
        assert_eq!(overlap_columns(&groups), (vec![0, 1, 0], 2));
        let chart = TimelineChart {
            title: "t".into(),
            subtitle: "s".into(),
            lanes: vec!["CPU 0".into(), "CPU 1".into(), "memory node 0".into()],
            transactions: interleaved,
        };
        let svg = timeline(&chart).unwrap();
        assert!(svg.contains("2 loads of CPU 0 in flight at once"), "{svg}");
        assert!(svg.contains("2 loads of CPU 1 in flight at once"));
        assert_eq!(svg.matches("<circle").count(), 6);
    }
}
