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

/// Where a platform's Markdown opens and closes a code fence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fences {
    /// CommonMark (Telegram's HTML is made from it): only a line that starts with one.
    AtLineStart,
    /// Discord: every ``` opens or closes one, mid-line too.
    Anywhere,
}

impl Fences {
    /// The fence open after `segment` (the info line that reopens it), given `open`
    /// before it; `line_start` says whether `segment` starts its line.
    fn open_after(self, segment: &str, line_start: bool, open: &Option<String>) -> Option<String> {
        let marks: Vec<usize> = match self {
            Fences::AtLineStart if line_start && segment.trim_start().starts_with(FENCE) => {
                segment.find(FENCE).into_iter().collect()
            }
            Fences::AtLineStart => Vec::new(),
            Fences::Anywhere => segment.match_indices(FENCE).map(|(at, _)| at).collect(),
        };
        let mut open = open.clone();
        for at in marks {
            open = match open {
                Some(_) => None,
                None => {
                    let info = segment[at + FENCE.len()..].lines().next().unwrap_or("");
                    let info = info.split(FENCE).next().unwrap_or("").trim();
                    Some(format!("{FENCE}{info}"))
                }
            };
        }
        open
    }
}

/// Splits `text` into pieces of at most `limit` units (as `units` counts them), at line
/// boundaries where possible and a line too long for one piece at a space. A code fence
/// open at a split (as `fences` reads them) is closed at the end of the piece and
/// reopened, with its language, at the start of the next.
pub fn split(text: &str, limit: usize, units: fn(&str) -> usize, fences: Fences) -> Vec<String> {
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
        let mut line_start = true;
        while !rest.is_empty() {
            // Room the piece must keep to close a fence that is open after this line.
            let fence_after = fences.open_after(rest, line_start, &open_fence);
            let reserve = if fence_after.is_some() {
                units(&close)
            } else {
                0
            };
            let room = limit.saturating_sub(units(&current) + reserve);
            if units(rest) <= room {
                open_fence = fence_after;
                current.push_str(rest);
                break;
            }
            if current.trim().is_empty() || current == reopened(&open_fence) {
                // The line alone is too long: cut it within the room left.
                let room = limit.saturating_sub(units(&current) + units(&close));
                let cut = cut_within(rest, room.max(1), units);
                open_fence = fences.open_after(&rest[..cut], line_start, &open_fence);
                current.push_str(&rest[..cut]);
                rest = &rest[cut..];
                line_start = false;
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

fn reopened(fence: &Option<String>) -> String {
    fence
        .as_ref()
        .map_or_else(String::new, |info| format!("{info}\n"))
}

/// Where to cut `text` to keep at most `room` units: after the last space or tab
/// within them, so no word is cut, or at the room's end when there is none.
fn cut_within(text: &str, room: usize, units: fn(&str) -> usize) -> usize {
    let end = prefix_within(text, room, units);
    match text[..end].rfind([' ', '\t']) {
        Some(space) if end < text.len() && space > 0 => space + 1,
        _ => end,
    }
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
        piece
            .lines()
            .filter(|l| l.trim_start().starts_with(FENCE))
            .count()
            % 2
            == 0
    }

    #[test]
    fn short_text_is_one_piece() {
        assert_eq!(
            split("hello\n", 10, char_len, Fences::AtLineStart),
            vec!["hello"]
        );
    }

    #[test]
    fn splits_at_lines_within_the_limit() {
        let text = (0..300)
            .map(|i| format!("line number {i}"))
            .collect::<Vec<_>>()
            .join("\n");
        let pieces = split(&text, 500, char_len, Fences::AtLineStart);
        assert!(pieces.len() >= 8);
        assert!(pieces.iter().all(|p| char_len(p) <= 500));
        assert_eq!(pieces.join("\n"), text, "splitting at lines loses nothing");
    }

    #[test]
    fn fences_are_closed_and_reopened_across_pieces() {
        let code: String = (0..200).map(|i| format!("let x{i} = {i};\n")).collect();
        let text = format!("Here:\n```rust\n{code}```\nDone.");
        let pieces = split(&text, 1000, char_len, Fences::AtLineStart);
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
        let pieces = split(&text, 4096, utf16_len, Fences::AtLineStart);
        assert_eq!(pieces.len(), 2);
        assert!(pieces.iter().all(|p| utf16_len(p) <= 4096));
        assert_eq!(pieces.concat(), text);
    }

    #[test]
    fn a_fence_opened_mid_line_is_closed_and_reopened_on_discord() {
        let code: String = (0..200).map(|i| format!("echo {i}\n")).collect();
        let text = format!("Run this: ```bash\n{code}``` and done.");
        let pieces = split(&text, 1000, char_len, Fences::Anywhere);
        assert!(pieces.len() >= 2, "{}", pieces.len());
        for piece in &pieces {
            assert!(char_len(piece) <= 1000, "{} units", char_len(piece));
            assert_eq!(piece.matches(FENCE).count() % 2, 0, "unbalanced:\n{piece}");
        }
        assert!(pieces[1].starts_with("```bash\n"), "{}", &pieces[1][..20]);
        assert!(pieces.last().unwrap().ends_with("``` and done."));
        let inline = "a ```x``` b\n".repeat(200);
        let pieces = split(&inline, 1000, char_len, Fences::Anywhere);
        assert!(
            pieces.iter().all(|p| !p.ends_with("\n```")),
            "nothing left open"
        );
    }

    #[test]
    fn a_long_line_is_cut_at_a_space() {
        let text = "abcdefghij ".repeat(300);
        let pieces = split(&text, 2000, char_len, Fences::Anywhere);
        assert_eq!(pieces.len(), 2);
        for piece in &pieces {
            assert!(char_len(piece) <= 2000);
            assert!(
                piece.starts_with("abcdefghij") && piece.ends_with("abcdefghij"),
                "cut mid-word"
            );
        }
        assert_eq!(pieces.join(" "), text.trim_end());
    }
}
