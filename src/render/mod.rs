//! Shapes Codex's Markdown replies for chat platforms: splitting at their length limits
//! with code fences kept balanced, Telegram's HTML flavour, and literal text for both.

mod literal;
mod telegram;

pub use literal::{fits_code_block, html_escape, markdown_escape};
pub use telegram::telegram_html;

/// Telegram counts message length in UTF-16 code units.
pub fn utf16_len(text: &str) -> usize {
    text.encode_utf16().count()
}

/// Discord counts message length in characters.
pub fn char_len(text: &str) -> usize {
    text.chars().count()
}

const FENCE: &str = "```";

/// Splits `text` into pieces of at most `limit` units (as `units` counts them), at line
/// boundaries where possible. A code fence open at a split is closed at the end of the
/// piece and reopened, with its language, at the start of the next.
pub fn split(text: &str, limit: usize, units: fn(&str) -> usize) -> Vec<String> {
    let text = text.trim_end();
    if units(text) <= limit {
        return vec![text.to_owned()];
    }
    let close = format!("\n{FENCE}");
    let mut pieces = Vec::new();
    let mut current = String::new();
    let mut open_fence: Option<String> = None;
    for line in text.split_inclusive('\n') {
        let mut rest = line;
        while !rest.is_empty() {
            // Room the piece must keep to close a fence that is open after this line.
            let fence_after = open_fence.is_some() != toggles_fence(rest);
            let reserve = if fence_after { units(&close) } else { 0 };
            let room = limit.saturating_sub(units(&current) + reserve);
            if units(rest) <= room {
                if toggles_fence(rest) {
                    open_fence = match open_fence {
                        Some(_) => None,
                        None => Some(rest.trim_end().to_owned()),
                    };
                }
                current.push_str(rest);
                break;
            }
            if current.trim().is_empty() || current == reopened(&open_fence) {
                // The line alone is too long: cut it at the room left.
                let room = limit.saturating_sub(units(&current) + units(&close));
                let cut = prefix_within(rest, room.max(1), units);
                current.push_str(&rest[..cut]);
                rest = &rest[cut..];
            }
            if open_fence.is_some() {
                if !current.ends_with('\n') {
                    current.push('\n');
                }
                current.push_str(FENCE);
            }
            pieces.push(current.trim_end().to_owned());
            current = reopened(&open_fence);
        }
    }
    if !current.trim().is_empty() && current != reopened(&open_fence) {
        pieces.push(current.trim_end().to_owned());
    }
    pieces
}

fn toggles_fence(line: &str) -> bool {
    line.trim_start().starts_with(FENCE)
}

fn reopened(fence: &Option<String>) -> String {
    fence
        .as_ref()
        .map_or_else(String::new, |info| format!("{info}\n"))
}

/// The longest prefix of `text` (at a char boundary) within `room` units.
fn prefix_within(text: &str, room: usize, units: fn(&str) -> usize) -> usize {
    let mut end = 0;
    for (index, c) in text.char_indices() {
        let next = index + c.len_utf8();
        if units(&text[..next]) > room {
            break;
        }
        end = next;
    }
    end.max(text.chars().next().map_or(0, char::len_utf8))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fences_balanced(piece: &str) -> bool {
        piece.lines().filter(|l| toggles_fence(l)).count() % 2 == 0
    }

    #[test]
    fn short_text_is_one_piece() {
        assert_eq!(split("hello\n", 10, char_len), vec!["hello"]);
    }

    #[test]
    fn splits_at_lines_within_the_limit() {
        let text = (0..300)
            .map(|i| format!("line number {i}"))
            .collect::<Vec<_>>()
            .join("\n");
        let pieces = split(&text, 500, char_len);
        assert!(pieces.len() >= 8);
        assert!(pieces.iter().all(|p| char_len(p) <= 500));
        assert_eq!(pieces.join("\n"), text, "splitting at lines loses nothing");
    }

    #[test]
    fn fences_are_closed_and_reopened_across_pieces() {
        let code: String = (0..200).map(|i| format!("let x{i} = {i};\n")).collect();
        let text = format!("Here:\n```rust\n{code}```\nDone.");
        let pieces = split(&text, 1000, char_len);
        assert!(pieces.len() >= 3, "{}", pieces.len());
        for piece in &pieces {
            assert!(char_len(piece) <= 1000, "{} units", char_len(piece));
            assert!(fences_balanced(piece), "unbalanced piece:\n{piece}");
        }
        assert!(
            pieces[1].starts_with("```rust\n"),
            "fence not reopened: {}",
            &pieces[1][..20]
        );
        assert!(pieces.last().unwrap().ends_with("Done."));
    }

    #[test]
    fn a_huge_line_is_cut_and_utf16_is_counted() {
        let text = "😀".repeat(3000); // 6000 UTF-16 units
        let pieces = split(&text, 4096, utf16_len);
        assert_eq!(pieces.len(), 2);
        assert!(pieces.iter().all(|p| utf16_len(p) <= 4096));
        assert_eq!(pieces.concat(), text);
    }
}
