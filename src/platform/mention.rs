//! Taking the bot's own mention out of a message, and nothing else: pasted code keeps its
//! newlines, indentation, tabs and repeated spaces.

/// `text` without every `mention` (ASCII case-insensitive) that stands as a word of its
/// own, each with the `:` or `,` and the spaces or tabs right after it.
pub fn strip_mention(text: &str, mention: &str) -> String {
    // ASCII lowercasing keeps every byte offset, so offsets found in `folded` fit `text`.
    let folded = text.to_ascii_lowercase();
    let mention = mention.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut from = 0;
    while let Some(found) = folded[from..].find(&mention) {
        let start = from + found;
        let end = start + mention.len();
        from = end;
        if !stands_alone(text, start, end) {
            continue;
        }
        out.push_str(&text[copied..start]);
        let rest = &text[end..];
        let rest = rest.strip_prefix([':', ',']).unwrap_or(rest);
        let rest = rest.trim_start_matches([' ', '\t']);
        copied = text.len() - rest.len();
        from = copied;
    }
    out.push_str(&text[copied..]);
    out
}

/// Whether `text[start..end]` is not part of a longer word (`@bot_2`) or an address
/// (`x@bot.dev`).
fn stands_alone(text: &str, start: usize, end: usize) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let joins_before = |c: char| word(c) || c == '@';
    let before = text[..start].chars().next_back();
    let after = text[end..].chars().next();
    let first = text[start..end].chars().next();
    let last = text[start..end].chars().next_back();
    let glued_before = before.is_some_and(word) && first.is_some_and(joins_before);
    let glued_after = after.is_some_and(word) && last.is_some_and(word);
    !glued_before && !glued_after
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_only_the_mention() {
        let cases: &[(&str, &str, &str)] = &[
            ("@codex_bot read   file x", "@codex_bot", "read   file x"),
            ("hi @Codex_Bot: go", "@codex_bot", "hi go"),
            (
                "@codex_bot\ndef f():\n    return 1\n\n\tx = 'ü  ✓'",
                "@codex_bot",
                "\ndef f():\n    return 1\n\n\tx = 'ü  ✓'",
            ),
            ("mail x@codex_bot.dev", "@codex_bot", "mail x@codex_bot.dev"),
            ("@codex_bot_2 hi", "@codex_bot", "@codex_bot_2 hi"),
            ("a @codex_bot b @codex_bot", "@codex_bot", "a b "),
            ("<@42> read\n  x", "<@42>", "read\n  x"),
            ("hey <@42>, go", "<@42>", "hey go"),
            ("<@421> not us", "<@42>", "<@421> not us"),
            (
                "no mention at all  \n",
                "@codex_bot",
                "no mention at all  \n",
            ),
        ];
        for (text, mention, expected) in cases {
            assert_eq!(&strip_mention(text, mention), expected, "{text:?}");
        }
    }
}
