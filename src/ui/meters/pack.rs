//! Flowing a meter's text items into lines: an item is never cut, a line
//! never runs past the width, and when the items need more lines than
//! the meter has, the least important ones are left out whole. This is
//! how a header line "wraps or collapses" instead of breaking off in the
//! middle of a number.

/// What the packer needs to know of one item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// Columns the item takes (at most, when used for the layout).
    pub width: u16,
    /// 0 is kept longest; larger numbers are left out first.
    pub priority: u8,
    /// Set off from the item before it by " │ " rather than one space
    /// (a new group), unless it starts a line.
    pub group: bool,
}

/// Columns between the previous item and this one on the same line.
pub fn gap(s: &Slot) -> u16 {
    if s.group { 3 } else { 1 }
}

/// The items in order, flowed into lines of `width`: indices per line.
/// An item wider than the line is left out (it could only be cut).
pub fn flow(slots: &[Slot], keep: &[bool], width: u16) -> Vec<Vec<usize>> {
    let mut lines: Vec<Vec<usize>> = Vec::new();
    let mut used = 0u16;
    for (i, s) in slots.iter().enumerate() {
        if !keep[i] || s.width > width {
            continue;
        }
        match lines.last_mut() {
            Some(line) if used + gap(s) + s.width <= width => {
                line.push(i);
                used += gap(s) + s.width;
            }
            _ => {
                lines.push(vec![i]);
                used = s.width;
            }
        }
    }
    lines
}

/// The lines [`flow`] gives when every item is kept.
pub fn lines_needed(slots: &[Slot], width: u16) -> u16 {
    let keep = vec![true; slots.len()];
    u16::try_from(flow(slots, &keep, width).len()).unwrap_or(u16::MAX)
}

/// The items flowed into at most `max_lines` lines of `width`, leaving out
/// the least important (the last of equals first) until they fit.
pub fn pack(slots: &[Slot], width: u16, max_lines: u16) -> Vec<Vec<usize>> {
    let mut keep = vec![true; slots.len()];
    loop {
        let lines = flow(slots, &keep, width);
        if lines.len() <= usize::from(max_lines) {
            return lines;
        }
        let drop = (0..slots.len())
            .filter(|&i| keep[i])
            .max_by_key(|&i| (slots[i].priority, i));
        match drop {
            Some(i) => keep[i] = false,
            None => return Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(width: u16, priority: u8) -> Slot {
        Slot {
            width,
            priority,
            group: false,
        }
    }

    #[test]
    fn items_wrap_whole() {
        let s = [slot(10, 0), slot(10, 0), slot(10, 0)];
        assert_eq!(pack(&s, 21, 3), vec![vec![0, 1], vec![2]]);
        assert_eq!(pack(&s, 20, 3), vec![vec![0], vec![1], vec![2]]);
        assert_eq!(lines_needed(&s, 32), 1);
        // A group starts with " │ ": three columns, not one.
        let g = [
            slot(10, 0),
            Slot {
                group: true,
                ..slot(10, 0)
            },
        ];
        assert_eq!(lines_needed(&g, 22), 2);
        assert_eq!(lines_needed(&g, 23), 1);
    }

    #[test]
    fn the_least_important_go_first_and_nothing_is_cut() {
        let s = [slot(10, 0), slot(10, 2), slot(10, 1), slot(10, 2)];
        // One line of 21 holds two: the priority 0 and the priority 1.
        assert_eq!(pack(&s, 21, 1), vec![vec![0, 2]]);
        // Too narrow for any item: nothing, rather than a cut item.
        assert_eq!(pack(&s, 9, 2), Vec::<Vec<usize>>::new());
        // An item wider than the line is left out, the rest still shown.
        let w = [slot(5, 0), slot(30, 0), slot(5, 1)];
        assert_eq!(pack(&w, 20, 1), vec![vec![0, 2]]);
        assert_eq!(pack(&s, 50, 0), Vec::<Vec<usize>>::new());
    }
}
