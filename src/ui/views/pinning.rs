//! Pinning view: the findings of `nettop --pinning-check`, relinted live on
//! the data thread with measured stolen time as evidence. A text view: its
//! lines are built in [`rows::pinning`](crate::ui::rows::pinning) and drawn
//! by `draw_text` in [`views`](super).

pub(crate) const HEADER: &str = "Pinning: findings of --pinning-check, live";
