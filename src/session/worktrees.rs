//! Git worktrees per chat (`/worktree`, `/worktrees`, `/merge`, `/discard`): made, read
//! and merged by the gateway's own scripts run through the chat's Codex server, so they
//! work where Codex runs (a worker's disk too). A worktree lives beside its main
//! checkout, in `.codex-worktrees/<repository>/<branch>` of the folder that holds it.

use chat::Chosen;
use codex::Exec;
use store::WorktreeRow;

use super::{Session, SessionError};

/// Makes the worktree: `$1` a folder of the repository, `$2` the branch (an existing one,
/// or new from HEAD), `$3` the worktree's folder name. Prints the main checkout, the
/// branch it is on, and the worktree's folder.
const MAKE: &str = r#"set -e
top=$(git -C "$1" rev-parse --show-toplevel 2>/dev/null) || exit 2
git check-ref-format --branch "$2" >/dev/null
base=$(git -C "$top" symbolic-ref --short -q HEAD) || { echo "the main checkout is on no branch (detached HEAD)" >&2; exit 3; }
dest="$(dirname "$top")/.codex-worktrees/$(basename "$top")/$3"
if git -C "$top" show-ref --verify --quiet "refs/heads/$2"; then
  git -C "$top" worktree add --quiet "$dest" "$2"
else
  git -C "$top" worktree add --quiet -b "$2" "$dest"
fi
printf '%s\n%s\n%s\n' "$top" "$base" "$dest""#;

/// The worktrees' states, all in one run: pairs of arguments, a worktree's folder and
/// the branch it came from. Prints a line per pair: commits behind and ahead of that
/// branch and the count of uncommitted changes, or `-` where they cannot be read.
const STATUS: &str = r#"while [ $# -gt 1 ]; do
  counts=$(cd "$1" && git rev-list --left-right --count "$2...HEAD" && git status --porcelain | wc -l) \
    && echo $counts || echo -
  shift 2
done"#;

/// Merges: `$1` the main checkout, `$2` the worktree, `$3` its branch, `$4` the branch
/// it came from. The worktree's uncommitted work is committed first; the main checkout
/// must be on `$4`; a merge that would conflict is refused before anything changes
/// (exit 4, the files listed); git itself refuses to overwrite uncommitted work there.
const MERGE: &str = r#"repo=$1 wt=$2 branch=$3 base=$4
name=$(git -C "$repo" config user.name || echo codex-gateway)
email=$(git -C "$repo" config user.email || echo codex-gateway@localhost)
if [ -n "$(git -C "$wt" status --porcelain)" ]; then
  git -C "$wt" add -A || exit 5
  git -C "$wt" -c user.name="$name" -c user.email="$email" commit -q -m "Work of the task on $branch" || exit 5
  echo committed
fi
current=$(git -C "$repo" symbolic-ref --short -q HEAD)
[ "$current" = "$base" ] || { echo "elsewhere $current"; exit 3; }
if ! tree=$(git -C "$repo" merge-tree --write-tree --name-only --no-messages "$base" "$branch"); then
  printf '%s\n' "$tree" | tail -n +2
  exit 4
fi
git -C "$repo" -c user.name="$name" -c user.email="$email" merge --no-edit -q "$branch" || exit 6
echo merged"#;

/// Removes the worktree `$2` of the main checkout `$1` and its branch `$3`.
const DISCARD: &str = r#"set -e
git -C "$1" worktree remove --force "$2"
git -C "$1" branch -D "$3""#;

/// A chat's worktree: the main checkout it was made from, its folder, its branch and the
/// branch it came from (which `/merge` merges into). Paths are where Codex runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worktree {
    pub repo: String,
    pub path: String,
    pub branch: String,
    pub base: String,
}

impl From<WorktreeRow> for Worktree {
    fn from(row: WorktreeRow) -> Self {
        let WorktreeRow {
            repo,
            path,
            branch,
            base,
        } = row;
        Worktree {
            repo,
            path,
            branch,
            base,
        }
    }
}

impl From<&Worktree> for WorktreeRow {
    fn from(worktree: &Worktree) -> Self {
        let Worktree {
            repo,
            path,
            branch,
            base,
        } = worktree.clone();
        WorktreeRow {
            repo,
            path,
            branch,
            base,
        }
    }
}

/// Why a worktree command did nothing: the text for the chat.
#[derive(Debug, thiserror::Error)]
pub enum WorktreeRefusal {
    #[error("this chat's folder is fixed by codex.chat_folders, so it cannot move to a worktree")]
    FixedFolder,
    #[error("this chat works in the worktree of {0} already: /merge or /discard it first")]
    AlreadyIn(String),
    #[error("this chat has no worktree: /worktree BRANCH makes one")]
    NoWorktree,
    #[error("the chat's folder {0} is in no git repository (/cwd moves the chat to one)")]
    NotARepository(String),
    #[error("git said: {0}")]
    Git(String),
    #[error(transparent)]
    Session(#[from] SessionError),
}

impl From<codex::CodexError> for WorktreeRefusal {
    fn from(error: codex::CodexError) -> Self {
        WorktreeRefusal::Session(error.into())
    }
}

impl From<store::StoreError> for WorktreeRefusal {
    fn from(error: store::StoreError) -> Self {
        WorktreeRefusal::Session(error.into())
    }
}

/// What `/merge` did.
#[derive(Debug, PartialEq, Eq)]
pub enum Merge {
    /// Merged into the branch it came from; `committed`: the worktree's uncommitted
    /// work was committed first.
    Merged { committed: bool },
    /// It would conflict in these files: nothing was merged.
    Conflicts(Vec<String>),
    /// The main checkout is on another branch than the one the worktree came from.
    MainElsewhere(String),
}

/// One worktree of a repository, as `/worktrees` lists it.
#[derive(Debug, PartialEq, Eq)]
pub struct WorktreeState {
    pub chat: String,
    pub row: Worktree,
    /// Commits (behind, ahead) of the branch it came from, and uncommitted changes;
    /// `None` where they could not be read (its folder gone).
    pub counts: Option<(u64, u64, u64)>,
}

/// A branch as a folder name: the same letters, `/` made `-`.
fn folder_name(branch: &str) -> String {
    branch.replace('/', "-")
}

/// The last thing git said (on stderr, else stdout), on one line.
fn git_said(exec: &Exec) -> String {
    let last = |text: &str| {
        text.lines()
            .rev()
            .find(|line| !line.trim().is_empty())
            .map(str::to_owned)
    };
    let said = last(&exec.stderr).or_else(|| last(&exec.stdout));
    said.unwrap_or_else(|| format!("exit status {}", exec.exit_code))
        .trim_start_matches("fatal: ")
        .to_owned()
}

fn counts(stdout: &str) -> Option<(u64, u64, u64)> {
    let mut numbers = stdout.split_whitespace().map(str::parse::<u64>);
    let behind = numbers.next()?.ok()?;
    let ahead = numbers.next()?.ok()?;
    let changes = numbers.next()?.ok()?;
    Some((behind, ahead, changes))
}

impl Session {
    /// The chat's worktree, if it has one.
    pub async fn worktree(&self) -> Result<Option<Worktree>, SessionError> {
        Ok(self
            .ctx
            .store
            .worktree(&self.chat)
            .await?
            .map(Worktree::from))
    }

    /// Makes a worktree of the chat's repository on `branch` and moves the chat there.
    pub async fn make_worktree(&mut self, branch: &str) -> Result<Worktree, WorktreeRefusal> {
        if self.fixed_folder().is_some() {
            return Err(WorktreeRefusal::FixedFolder);
        }
        if let Some(row) = self.worktree().await? {
            return Err(WorktreeRefusal::AlreadyIn(row.branch));
        }
        self.choices().await?;
        let folder = self.folder()?.display().to_string();
        let server = self.server().await?;
        let made = server
            .run_script(MAKE, &[&folder, branch, &folder_name(branch)])
            .await?;
        if made.exit_code == 2 {
            return Err(WorktreeRefusal::NotARepository(folder));
        }
        let mut lines = made.stdout.lines();
        let (Some(repo), Some(base), Some(path), 0) =
            (lines.next(), lines.next(), lines.next(), made.exit_code)
        else {
            return Err(WorktreeRefusal::Git(git_said(&made)));
        };
        let row = Worktree {
            repo: repo.into(),
            path: path.into(),
            branch: branch.into(),
            base: base.into(),
        };
        self.ctx
            .store
            .set_worktree(&self.chat, &WorktreeRow::from(&row))
            .await?;
        self.choose(Chosen::Folder(Some(row.path.clone()))).await?;
        Ok(row)
    }

    /// The worktrees made from the chat's repository (its worktree's, else its folder's
    /// main checkout), each with its counts.
    pub async fn worktrees(&mut self) -> Result<Vec<WorktreeState>, SessionError> {
        let repo = match self.worktree().await? {
            Some(row) => row.repo,
            None => {
                self.choices().await?;
                self.folder()?.display().to_string()
            }
        };
        let made = self.ctx.store.worktrees_of(&repo).await?;
        if made.is_empty() {
            return Ok(Vec::new());
        }
        let args: Vec<&str> = made
            .iter()
            .flat_map(|(_, row)| [row.path.as_str(), row.base.as_str()])
            .collect();
        let status = self.server().await?.run_script(STATUS, &args).await?;
        let mut lines = status.stdout.lines();
        let states = made.into_iter().map(|(chat, row)| WorktreeState {
            chat,
            row: row.into(),
            counts: lines.next().and_then(counts),
        });
        Ok(states.collect())
    }

    /// Merges the chat's worktree branch into the branch it came from, in the main
    /// checkout. The chat stays in its worktree.
    pub async fn merge_worktree(&mut self) -> Result<(Worktree, Merge), WorktreeRefusal> {
        let row = self.worktree().await?.ok_or(WorktreeRefusal::NoWorktree)?;
        let server = self.server().await?;
        let args = [&*row.repo, &*row.path, &*row.branch, &*row.base];
        let done = server.run_script(MERGE, &args).await?;
        let committed = done.stdout.lines().next() == Some("committed");
        let merge = match done.exit_code {
            0 => Merge::Merged { committed },
            3 => {
                let line = done
                    .stdout
                    .lines()
                    .find_map(|l| l.strip_prefix("elsewhere "));
                Merge::MainElsewhere(line.unwrap_or("no branch").to_owned())
            }
            4 => {
                let files = done
                    .stdout
                    .lines()
                    .filter(|l| !l.is_empty() && *l != "committed");
                Merge::Conflicts(files.map(str::to_owned).collect())
            }
            _ => return Err(WorktreeRefusal::Git(git_said(&done))),
        };
        Ok((row, merge))
    }

    /// Removes the chat's worktree and its branch; the chat goes back to the main
    /// checkout.
    pub async fn discard_worktree(&mut self) -> Result<Worktree, WorktreeRefusal> {
        let row = self.worktree().await?.ok_or(WorktreeRefusal::NoWorktree)?;
        let server = self.server().await?;
        let args = [&*row.repo, &*row.path, &*row.branch];
        let done = server.run_script(DISCARD, &args).await?;
        if done.exit_code != 0 {
            return Err(WorktreeRefusal::Git(git_said(&done)));
        }
        self.ctx.store.clear_worktree(&self.chat).await?;
        self.choose(Chosen::Folder(Some(row.repo.clone()))).await?;
        Ok(row)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_output_is_read_as_the_scripts_print_it() {
        assert_eq!(counts("2 5 3"), Some((2, 5, 3)));
        assert_eq!(counts("-"), None);
        let failed = Exec {
            exit_code: 128,
            stdout: String::new(),
            stderr: "fatal: 'a..b' is not a valid branch name\n".into(),
        };
        assert_eq!(git_said(&failed), "'a..b' is not a valid branch name");
        assert_eq!(folder_name("feature/login"), "feature-login");
    }
}
