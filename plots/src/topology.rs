//! A machine's shape as nested boxes: sockets side by side, the NUMA nodes
//! of each stacked inside it, the L3 domains of each node in a grid, each
//! domain with its core count and CPU list, and lines of notes (latencies,
//! sources) underneath.

use super::{draw_err, render, text_width, title_width, PlotError, FONT};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One L3 domain (an Intel die's mesh, an AMD CCX).
#[derive(Clone, Debug, PartialEq)]
pub struct L3Box {
    /// e.g. "L3 3".
    pub label: String,
    /// e.g. "8 cores, CPUs 24-31,152-159".
    pub detail: String,
}

/// One NUMA node and its L3 domains.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeBox {
    pub label: String,
    pub l3_domains: Vec<L3Box>,
}

/// One socket and its nodes.
#[derive(Clone, Debug, PartialEq)]
pub struct SocketBox {
    pub label: String,
    pub nodes: Vec<NodeBox>,
}

/// A machine drawn as nested boxes.
#[derive(Clone, Debug, PartialEq)]
pub struct TopologyChart {
    pub title: String,
    pub subtitle: String,
    pub sockets: Vec<SocketBox>,
    /// Lines written under the drawing (latencies with units, sources).
    pub notes: Vec<String>,
}

const L3_HEIGHT: i32 = 46;
const GAP: i32 = 10;
const LABEL_HEIGHT: i32 = 24;
const DETAIL_SIZE: f64 = 12.0;
/// At most this many L3 domains side by side in a node.
const MAX_COLUMNS: usize = 4;
/// The width the drawing aims at (a page of the book shows about 1000 px).
const TARGET_WIDTH: i32 = 1100;

/// The machine as an SVG document.
pub fn topology(chart: &TopologyChart) -> Result<String, PlotError> {
    check_topology(chart)?;
    let grid = Grid::for_chart(chart);
    let socket_width = grid.node_width + 2 * GAP;
    let drawing_height = chart
        .sockets
        .iter()
        .map(|s| grid.socket_height(s))
        .max()
        .unwrap_or(0);
    let sockets = chart.sockets.len() as i32;
    let top = 80;
    let notes_top = top + drawing_height + 30;
    let notes_width = chart
        .notes
        .iter()
        .map(|n| text_width(n, 13.0) as i32 + 40)
        .max()
        .unwrap_or(0);
    let width = (sockets * (socket_width + GAP) + GAP + 20)
        .max(title_width(&chart.title) as i32)
        .max(text_width(&chart.subtitle, 14.0) as i32 + 40)
        .max(notes_width);
    let height = notes_top + chart.notes.len() as i32 * 20 + 20;
    render(width as u32, height as u32, |root| {
        let centred = |size: i32| {
            TextStyle::from((FONT, size).into_font()).pos(Pos::new(HPos::Center, VPos::Center))
        };
        root.draw(&Text::new(
            chart.title.as_str(),
            (width / 2, 24),
            centred(22),
        ))
        .map_err(draw_err)?;
        root.draw(&Text::new(
            chart.subtitle.as_str(),
            (width / 2, 52),
            centred(14),
        ))
        .map_err(draw_err)?;
        let socket_fill = RGBColor(240, 240, 240);
        let mut x = 20;
        for s in &chart.sockets {
            let h = grid.socket_height(s);
            let rect = [(x, top), (x + socket_width, top + h)];
            root.draw(&Rectangle::new(rect, socket_fill.filled()))
                .map_err(draw_err)?;
            root.draw(&Rectangle::new(rect, FRAME.stroke_width(2)))
                .map_err(draw_err)?;
            root.draw(&Text::new(
                s.label.as_str(),
                (x + GAP, top + LABEL_HEIGHT / 2),
                left_text(15.0),
            ))
            .map_err(draw_err)?;
            let mut y = top + LABEL_HEIGHT;
            for n in &s.nodes {
                draw_node(root, &grid, n, x + GAP, y)?;
                y += grid.node_height(n) + GAP;
            }
            x += socket_width + GAP;
        }
        for (i, note) in chart.notes.iter().enumerate() {
            root.draw(&Text::new(
                note.as_str(),
                (20, notes_top + i as i32 * 20),
                left_text(13.0),
            ))
            .map_err(draw_err)?;
        }
        Ok(())
    })
}

/// Refuses a machine without sockets, a socket without nodes or a node
/// without L3 domains.
fn check_topology(chart: &TopologyChart) -> Result<(), PlotError> {
    if chart.sockets.is_empty() {
        return Err(PlotError::Empty("the list of sockets".into()));
    }
    for s in &chart.sockets {
        if s.nodes.is_empty() {
            return Err(PlotError::Empty(format!("the nodes of `{}`", s.label)));
        }
        for n in &s.nodes {
            if n.l3_domains.is_empty() {
                return Err(PlotError::Empty(format!("the L3 domains of `{}`", n.label)));
            }
        }
    }
    Ok(())
}

/// The boxes' frame colour.
const FRAME: RGBColor = RGBColor(90, 90, 90);

/// Text from its left end, centred vertically.
fn left_text(size: f64) -> TextStyle<'static> {
    TextStyle::from((FONT, size).into_font()).pos(Pos::new(HPos::Left, VPos::Center))
}

/// How L3 boxes are laid out in a node: `columns` side by side, each
/// `l3_width` wide, in a node `node_width` wide.
struct Grid {
    columns: i32,
    l3_width: i32,
    node_width: i32,
}

impl Grid {
    /// The grid of `chart`: every L3 box as wide as the longest text any
    /// of them holds, and as many side by side as keep the drawing about
    /// `TARGET_WIDTH` wide, at least one and at most `MAX_COLUMNS`.
    fn for_chart(chart: &TopologyChart) -> Grid {
        let nodes = || chart.sockets.iter().flat_map(|s| &s.nodes);
        let l3_width = nodes()
            .flat_map(|n| &n.l3_domains)
            .map(|b| text_width(&b.detail, DETAIL_SIZE).max(text_width(&b.label, 13.0)))
            .fold(0.0, f64::max) as i32
            + 16;
        let widest_node = nodes().map(|n| n.l3_domains.len()).max().unwrap_or(1);
        let per_socket = TARGET_WIDTH / chart.sockets.len() as i32 - 4 * GAP;
        let columns = ((per_socket / (l3_width + GAP)) as usize)
            .min(widest_node)
            .clamp(1, MAX_COLUMNS) as i32;
        Grid {
            columns,
            l3_width,
            node_width: columns * (l3_width + GAP) + GAP,
        }
    }

    fn node_height(&self, n: &NodeBox) -> i32 {
        let rows = n.l3_domains.len().div_ceil(self.columns as usize) as i32;
        LABEL_HEIGHT + rows * (L3_HEIGHT + GAP)
    }

    fn socket_height(&self, s: &SocketBox) -> i32 {
        LABEL_HEIGHT
            + s.nodes
                .iter()
                .map(|n| self.node_height(n) + GAP)
                .sum::<i32>()
    }
}

/// Node `n`'s box at (`nx`, `y`) with its label and its L3 domains' boxes.
fn draw_node(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    grid: &Grid,
    n: &NodeBox,
    nx: i32,
    y: i32,
) -> Result<(), PlotError> {
    let node_fill = RGBColor(222, 235, 247);
    let l3_fill = RGBColor(255, 255, 255);
    let (columns, l3_width) = (grid.columns, grid.l3_width);
    let nh = grid.node_height(n);
    let rect = [(nx, y), (nx + grid.node_width, y + nh)];
    root.draw(&Rectangle::new(rect, node_fill.filled()))
        .map_err(draw_err)?;
    root.draw(&Rectangle::new(rect, FRAME.stroke_width(1)))
        .map_err(draw_err)?;
    root.draw(&Text::new(
        n.label.as_str(),
        (nx + GAP, y + LABEL_HEIGHT / 2),
        left_text(13.0),
    ))
    .map_err(draw_err)?;
    for (i, b) in n.l3_domains.iter().enumerate() {
        let col = i as i32 % columns;
        let row = i as i32 / columns;
        let bx = nx + GAP + col * (l3_width + GAP);
        let by = y + LABEL_HEIGHT + row * (L3_HEIGHT + GAP);
        let rect = [(bx, by), (bx + l3_width, by + L3_HEIGHT)];
        root.draw(&Rectangle::new(rect, l3_fill.filled()))
            .map_err(draw_err)?;
        root.draw(&Rectangle::new(rect, FRAME.stroke_width(1)))
            .map_err(draw_err)?;
        root.draw(&Text::new(
            b.label.as_str(),
            (bx + 8, by + 14),
            left_text(13.0),
        ))
        .map_err(draw_err)?;
        root.draw(&Text::new(
            b.detail.as_str(),
            (bx + 8, by + 32),
            left_text(DETAIL_SIZE),
        ))
        .map_err(draw_err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine() -> TopologyChart {
        TopologyChart {
            title: "two sockets".into(),
            subtitle: "2 sockets, 2 nodes, 3 L3 domains".into(),
            sockets: vec![
                SocketBox {
                    label: "socket 0".into(),
                    nodes: vec![NodeBox {
                        label: "node 0".into(),
                        l3_domains: vec![
                            L3Box {
                                label: "L3 0".into(),
                                detail: "8 cores, CPUs 0-7".into(),
                            },
                            L3Box {
                                label: "L3 1".into(),
                                detail: "8 cores, CPUs 8-15".into(),
                            },
                        ],
                    }],
                },
                SocketBox {
                    label: "socket 1".into(),
                    nodes: vec![NodeBox {
                        label: "node 1".into(),
                        l3_domains: vec![L3Box {
                            label: "L3 2".into(),
                            detail: "8 cores, CPUs 16-23".into(),
                        }],
                    }],
                },
            ],
            notes: vec!["L3 transfer: 69 cycles".into()],
        }
    }

    #[test]
    fn every_box_and_note_is_written() {
        let svg = topology(&machine()).unwrap();
        for text in [
            "two sockets",
            "socket 0",
            "socket 1",
            "node 1",
            "L3 2",
            "8 cores, CPUs 8-15",
            "L3 transfer: 69 cycles",
        ] {
            assert!(svg.contains(text), "no `{text}` in the SVG");
        }
        // Sockets, nodes and L3 domains: a filled and a framed rectangle each.
        assert_eq!(svg.matches("<rect").count(), 1 + 2 * (2 + 2 + 3));
        assert_eq!(svg, topology(&machine()).unwrap());
    }

    #[test]
    fn empty_parts_are_errors() {
        let mut m = machine();
        m.sockets[1].nodes[0].l3_domains.clear();
        assert_eq!(
            topology(&m),
            Err(PlotError::Empty("the L3 domains of `node 1`".into()))
        );
        m.sockets.clear();
        assert_eq!(
            topology(&m),
            Err(PlotError::Empty("the list of sockets".into()))
        );
    }
}
