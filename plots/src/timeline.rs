//! The timeline: a sequence diagram of coherence messages between CPUs and
//! the directories (homes), one lane each, time going down.
//!
//! Each message has a row of its own, so no two labels share a line of
//! text; the rows of one transaction sit in a shaded band under a caption,
//! and each row starts with the cycles the message is sent and arrives at.

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
    let gutter = 150;
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
    let captions_w = chart
        .transactions
        .iter()
        .map(|t| text_width(&t.caption, 12.0))
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
        .max(captions_w + 40)
        .max(legend_w + 40)
        .max(text_width(&chart.subtitle, 14.0) as i32 + 40)
        .max(title_width(&chart.title) as i32);
    let top = 130;
    let caption_h = 22;
    let row_h = 26;
    let band_gap = 8;
    let rows: i32 = chart
        .transactions
        .iter()
        .map(|t| caption_h + row_h * t.messages.len() as i32 + band_gap)
        .sum();
    let height = top + rows + 30;
    let lane_x = |i: usize| gutter + lane_w * i as i32 + lane_w / 2;
    let text = |size: i32, h: HPos, color: RGBColor| {
        let mut style = TextStyle::from((FONT, size).into_font()).pos(Pos::new(h, VPos::Center));
        style.color = color.to_backend_color();
        style
    };
    render(width as u32, height as u32, |root| {
        let d = |e: Result<(), _>| e.map_err(draw_err);
        d(root.draw(&Text::new(
            chart.title.as_str(),
            (width / 2, 22),
            text(22, HPos::Center, BLACK),
        )))?;
        d(root.draw(&Text::new(
            chart.subtitle.as_str(),
            (width / 2, 48),
            text(14, HPos::Center, BLACK),
        )))?;
        // Legend: one arrow per kind of message.
        for (k, kind) in kinds.iter().enumerate() {
            let x = 20 + 150 * k as i32;
            let y = 74;
            draw_arrow(root, x, x + 30, y, kind.color())?;
            d(root.draw(&Text::new(
                kind.describe(),
                (x + 38, y),
                text(12, HPos::Left, BLACK),
            )))?;
        }
        // Column heads and lifelines.
        d(root.draw(&Text::new(
            "cycle sent → arrived",
            (gutter - 10, top - 14),
            text(12, HPos::Right, BLACK),
        )))?;
        for (i, lane) in chart.lanes.iter().enumerate() {
            d(root.draw(&Text::new(
                lane.as_str(),
                (lane_x(i), top - 14),
                text(13, HPos::Center, BLACK),
            )))?;
        }
        // The bands first, then the lifelines over them, then the messages.
        let mut y = top;
        for (n, t) in chart.transactions.iter().enumerate() {
            let band_h = caption_h + row_h * t.messages.len() as i32;
            if n % 2 == 0 {
                d(root.draw(&Rectangle::new(
                    [(10, y), (width - 10, y + band_h)],
                    RGBColor(244, 246, 250).filled(),
                )))?;
            }
            y += band_h + band_gap;
        }
        for i in 0..chart.lanes.len() {
            d(root.draw(&PathElement::new(
                vec![(lane_x(i), top), (lane_x(i), height - 20)],
                RGBColor(170, 170, 170).stroke_width(1),
            )))?;
        }
        let mut y = top;
        for t in &chart.transactions {
            let band_h = caption_h + row_h * t.messages.len() as i32;
            d(root.draw(&Text::new(
                t.caption.as_str(),
                (20, y + caption_h / 2),
                text(12, HPos::Left, RGBColor(60, 60, 60)),
            )))?;
            let mut row = y + caption_h;
            for m in &t.messages {
                let mid = row + row_h / 2;
                d(root.draw(&Text::new(
                    format!("{} → {}", m.send_cycle, m.arrive_cycle),
                    (gutter - 10, mid + 4),
                    text(12, HPos::Right, BLACK),
                )))?;
                let (x0, x1) = (lane_x(m.from), lane_x(m.to));
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
                let cx = label_centre_x(gutter, lane_w, m.from, m.to);
                d(root.draw(&Text::new(
                    m.label.as_str(),
                    (cx, mid - 4),
                    text(12, HPos::Center, m.kind.color()),
                )))?;
                row += row_h;
            }
            y += band_h + band_gap;
        }
        Ok(())
    })
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
            }],
        };
        let svg = timeline(&chart).unwrap();
        assert!(svg.contains("\nrequest\n"), "{svg}");
        assert!(svg.contains("\ndata\n"));
        for absent in ["\nforward\n", "\ninvalidate\n", "\nacknowledgement\n"] {
            assert!(!svg.contains(absent), "{absent} in the legend");
        }
    }
}
