//! Where the tabs sit on the tab line: the one layout both the chrome
//! (drawing them) and the keymap (a click on one) use, so a click always
//! lands on the tab drawn under it.

use super::rows::View;

/// Tab labels as drawn on the tab line, with their x ranges (for the mouse).
pub fn tab_spans() -> Vec<(View, String, u16, u16)> {
    let mut x = 0u16;
    View::ALL
        .iter()
        .map(|v| {
            let label = format!(" {} {} ", v.index() + 1, v.title());
            let w = label.chars().count() as u16;
            let span = (*v, label, x, x + w);
            x += w + 1;
            span
        })
        .collect()
}

pub(crate) fn tab_at(x: u16) -> Option<View> {
    tab_spans()
        .into_iter()
        .find(|(_, _, a, b)| x >= *a && x < *b)
        .map(|(v, ..)| v)
}
