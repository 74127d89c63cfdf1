//! Plain horizontal bars: a value per group and series, written at the end
//! of each bar as a short number (counts, cycles), where the comparison
//! charts write percentages against a base.

use super::{grouped_bars_frame, hbars, render, short_number, PlotError};

/// Per group (a category), one bar per series, a colour per series: a
/// histogram of outcomes per variant, or a cost per variant and machine.
#[derive(Clone, Debug, PartialEq)]
pub struct BarChart {
    pub title: String,
    /// The value axis, with its unit, e.g. "cycles per read".
    pub value_label: String,
    /// The group axis, e.g. "variant".
    pub category_label: String,
    /// The groups, top to bottom.
    pub categories: Vec<String>,
    /// (series name, one value per group).
    pub series: Vec<(String, Vec<f64>)>,
}

/// The bar chart as an SVG document.
pub fn bars(chart: &BarChart) -> Result<String, PlotError> {
    let (label_area, width, height) =
        grouped_bars_frame(&chart.title, &chart.categories, &chart.series)?;
    let fmt = |v: f64| short_number(v);
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
            0.0,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart() -> BarChart {
        BarChart {
            title: "Outcomes".into(),
            value_label: "rounds".into(),
            category_label: "variant".into(),
            categories: vec!["plain".into(), "fence".into()],
            series: vec![
                ("r1 = 0, r2 = 0".into(), vec![947.0, 0.0]),
                ("r1 = 1, r2 = 1".into(), vec![0.0, 958.0]),
            ],
        }
    }

    #[test]
    fn a_bar_chart_writes_its_values_and_legend() {
        let svg = bars(&chart()).unwrap();
        assert!(svg.starts_with("<svg"), "{svg}");
        for text in [
            "Outcomes", "rounds", "variant", "plain", "fence", "947", "958",
        ] {
            assert!(svg.contains(text), "no `{text}`");
        }
        assert!(svg.contains("r1 = 0, r2 = 0"));
    }

    #[test]
    fn nothing_to_draw_is_an_error() {
        let empty = BarChart {
            categories: Vec::new(),
            ..chart()
        };
        assert_eq!(
            bars(&empty),
            Err(PlotError::Empty("the list of groups".into()))
        );
        let mut uneven = chart();
        uneven.series[0].1.pop();
        assert!(matches!(bars(&uneven), Err(PlotError::Invalid(_))));
        let mut infinite = chart();
        infinite.series[1].1[0] = f64::INFINITY;
        assert!(matches!(bars(&infinite), Err(PlotError::Invalid(_))));
    }
}
