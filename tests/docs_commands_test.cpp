// The documentation is tested: every `trainlab ...` command line shown in README.md and docs/*.md (in
// shell code blocks and in inline code) is checked against the real command line, parsed in-process
// and never run: its subcommand exists, every flag exists on it, and the whole line parses. Each
// subcommand's --help ends with example lines that parse and that its docs page shows. A renamed or
// removed flag fails here, not in a user's terminal.
//
// What is checked, and what is not:
// - Everything after a bare `--` is the user's own command (`trainlab profile -- python train.py`).
// - Placeholders stand for values: an upper-case word (FILE, RUN-ID, BEFORE, N, FILE.py:FACTORY), a
//   word in angle brackets (<run-id>) or one holding "...". A parse error about a placeholder's value
//   passes; a flag is checked by name whatever its value.
// - Inline code may name a command without its required arguments (`trainlab compare` with one
//   argument ...): there a missing required argument passes; in a code block it does not.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <iostream>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "harness/cli/cli.h"

namespace trainlab {
namespace {

namespace fs = std::filesystem;

struct ShownCommand {
  std::string where;                // FILE:LINE
  std::vector<std::string> words;   // after `trainlab`, up to a bare `--` or the end of the command
  bool inline_code = false;         // from inline code, not a code block
  std::string text() const {
    std::string t = "trainlab";
    for (const std::string& w : words) t += " " + w;
    return t;
  }
};

// Shell-like words: quotes group and are removed, a backslash escapes; a control operator (|, ;, &&,
// ||, &, a redirection) ends the command, and so does a comment.
std::vector<std::string> shell_words(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else {
        word += c;
      }
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
      continue;
    }
    if (c == '\\' && i + 1 < text.size()) {
      word += text[++i];
      in_word = true;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
      continue;
    }
    if (!in_word && c == '#') break;  // a comment
    if (c == '|' || c == ';' || c == '&') {  // a pipe, a list, a background job, 2>&1
      if (in_word) words.push_back(word);
      return words;
    }
    if (c == '>' && (!in_word || word == "1" || word == "2")) {  // a redirection (`<x>` stays a word)
      if (in_word && word != "1" && word != "2") words.push_back(word);
      return words;
    }
    word += c;
    in_word = true;
  }
  if (in_word) words.push_back(word);
  return words;
}

bool is_placeholder(const std::string& word) {
  static const std::regex upper_word("[A-Z][A-Z0-9_]*([-.][A-Za-z0-9_]+)*(:[A-Z][A-Z0-9_]*)?");
  static const std::regex angle_word(".*<[^>]+>.*");
  return std::regex_match(word, upper_word) || std::regex_match(word, angle_word) ||
         word.find("...") != std::string::npos;
}

// The trainlab command in one shell command line, if it holds one: the words after the `trainlab`
// (or `build/trainlab`, `./trainlab`) word, cut at a bare `--`. Inline code mentions it anywhere
// (`next: trainlab diagnose ...`).
bool find_command(const std::string& line, const std::string& where, bool inline_code, ShownCommand& found) {
  const std::vector<std::string> words = shell_words(line);
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    const bool is_trainlab = w == "trainlab" || (w.size() > 9 && w.compare(w.size() - 9, 9, "/trainlab") == 0);
    if (!is_trainlab) continue;
    // In a code block the program is run: the first word, after VAR=VALUE assignments, or what a
    // launcher runs (`torchrun ... --no-python build/trainlab ...`); not `cmake --target trainlab`.
    static const std::regex assignment("[A-Za-z_][A-Za-z0-9_]*=.*");
    const bool runs = i == 0 || std::regex_match(words[i - 1], assignment) || words[i - 1] == "--no-python" ||
                      words[i - 1] == "exec" || words[i - 1] == "nice" || words[i - 1] == "time";
    if (!inline_code && !runs) continue;
    found = ShownCommand{where, {}, inline_code};
    for (size_t j = i + 1; j < words.size() && words[j] != "--"; ++j) found.words.push_back(words[j]);
    // `trainlab ...`, `trainlab COMMAND`: any command, not one to check.
    return found.words.empty() || !is_placeholder(found.words.front());
  }
  return false;
}

// Every trainlab command shown in one markdown file: in code blocks of shell (``` with no language,
// sh, bash, console, shell), with `\` continuations joined, and in inline code outside code blocks.
std::vector<ShownCommand> commands_in(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  const std::string name = file.filename().string() == "README.md" && file.parent_path().filename() != "docs"
                               ? "README.md"
                               : "docs/" + file.filename().string();
  std::vector<ShownCommand> found;
  std::string prose;               // the text outside code blocks, lines kept (inline code may span lines)
  std::vector<size_t> prose_line;  // the file line of each of prose's characters
  const auto add_prose = [&](const std::string& text, size_t line_number) {
    prose += text + "\n";
    prose_line.resize(prose.size(), line_number);
  };
  bool in_block = false, shell_block = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    const std::string where = name + ":" + std::to_string(i + 1);
    if (line.rfind("```", 0) == 0) {
      if (!in_block) {
        const std::string language = line.substr(3);
        shell_block = language.empty() || language == "sh" || language == "bash" || language == "console" ||
                      language == "shell";
      }
      in_block = !in_block;
      add_prose("", i + 1);
      continue;
    }
    if (in_block) {
      if (!shell_block) continue;
      std::string joined = line;
      const size_t first = i;
      while (!joined.empty() && joined.back() == '\\' && i + 1 < lines.size()) {
        joined.pop_back();
        joined += " " + lines[++i];
      }
      ShownCommand command;
      if (find_command(joined, name + ":" + std::to_string(first + 1), false, command)) found.push_back(command);
      continue;
    }
    add_prose(line, i + 1);
  }
  const std::regex code_span("`([^`]+)`");
  for (auto it = std::sregex_iterator(prose.begin(), prose.end(), code_span); it != std::sregex_iterator(); ++it) {
    std::string span = (*it)[1].str();
    std::replace(span.begin(), span.end(), '\n', ' ');
    const size_t at = static_cast<size_t>(it->position(0));
    ShownCommand command;
    if (span.find("trainlab ") == std::string::npos) continue;
    if (find_command(span, name + ":" + std::to_string(at < prose_line.size() ? prose_line[at] : 0), true, command) &&
        !command.words.empty()) {  // `trainlab` alone names the program
      found.push_back(command);
    }
  }
  return found;
}

// Whether the message names one of the command's placeholders as a word of its own ("N" in "invalid
// --steps N", not in "INT").
bool mentions_placeholder(const std::string& message, const std::vector<std::string>& words) {
  const auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; };
  for (const std::string& w : words) {
    if (!is_placeholder(w)) continue;
    for (size_t at = message.find(w); at != std::string::npos; at = message.find(w, at + 1)) {
      const bool starts = at == 0 || !word_char(message[at - 1]);
      const bool ends = at + w.size() == message.size() || !word_char(message[at + w.size()]);
      if (starts && ends) return true;
    }
  }
  return false;
}

// "" when the command is trainlab's, else why not.
std::string check_command(const ShownCommand& command) {
  const std::vector<std::string>& words = command.words;
  if (words.empty()) return "no subcommand";
  std::string problem;
  with_command_line([&](CLI::App& app) {
    // The subcommand (and model's `add`), and every flag on it or its parents.
    CLI::App* target = &app;
    size_t i = 0;
    while (i < words.size() && words[i].rfind("-", 0) != 0) {
      const std::vector<CLI::App*> named =
          target->get_subcommands([&](CLI::App* sub) { return sub->get_name() == words[i]; });
      if (named.empty()) break;
      target = named.front();
      ++i;
    }
    if (target == &app && words[0].rfind("-", 0) != 0) {
      problem = "no subcommand '" + words[0] + "'";
      return;
    }
    for (const std::string& w : words) {
      if (w.size() < 2 || w[0] != '-' || (w[1] >= '0' && w[1] <= '9')) continue;  // a value, or a negative number
      const std::string flag = w.substr(0, w.find('='));
      bool known = false;
      for (CLI::App* scope = target; scope != nullptr && !known; scope = scope->get_parent()) {
        known = scope->get_option_no_throw(flag) != nullptr;
      }
      if (!known) {
        problem = "no option " + flag + " on '" + target->get_name() + "'";
        return;
      }
    }
    // The whole line through the parser (CLI11 takes it reversed).
    std::vector<std::string> reversed(words.rbegin(), words.rend());
    try {
      app.parse(reversed);
    } catch (const CLI::CallForHelp&) {
    } catch (const CLI::CallForAllHelp&) {
    } catch (const CLI::CallForVersion&) {
    } catch (const CLI::RequiredError& e) {
      if (!command.inline_code) problem = e.what();
    } catch (const CLI::ParseError& e) {
      if (!mentions_placeholder(e.what(), words)) problem = e.what();
    } catch (const std::exception& e) {  // an option's own check (InputError)
      if (!mentions_placeholder(e.what(), words)) problem = e.what();
    }
  });
  return problem;
}

std::vector<fs::path> documentation_files() {
  const fs::path root = TRAINLAB_SOURCE_DIR;
  std::vector<fs::path> files = {root / "README.md"};
  std::vector<fs::path> pages;
  for (const fs::directory_entry& e : fs::directory_iterator(root / "docs")) {
    if (e.path().extension() == ".md") pages.push_back(e.path());
  }
  std::sort(pages.begin(), pages.end());
  files.insert(files.end(), pages.begin(), pages.end());
  return files;
}

std::string normalised(std::string command) {
  const size_t comment = command.find(" #");
  if (comment != std::string::npos) command.erase(comment);
  std::istringstream in(command);
  std::string out;
  for (std::string w; in >> w;) out += (out.empty() ? "" : " ") + w;
  return out;
}

TEST(DocsCommands, EveryCommandShownParses) {
  int checked = 0;
  std::set<std::string> files_with_commands;
  for (const fs::path& file : documentation_files()) {
    for (const ShownCommand& command : commands_in(file)) {
      ++checked;
      files_with_commands.insert(command.where.substr(0, command.where.find(':')));
      const std::string problem = check_command(command);
      EXPECT_EQ(problem, "") << command.where << ": " << command.text();
    }
  }
  // The walk finds what is there: README's jobs and the pages' examples.
  EXPECT_GE(checked, 60);
  for (const std::string page : {"README.md", "docs/lab.md", "docs/sweep.md", "docs/profiler.md", "docs/diagnosis.md",
                                 "docs/compare.md", "docs/model.md", "docs/distributed.md"}) {
    EXPECT_EQ(files_with_commands.count(page), 1u) << page << " shows no trainlab command";
  }
  std::cout << checked << " trainlab command lines checked in README.md and docs/\n";
}

// The checker itself: what it must refuse, and what it must let pass.
TEST(DocsCommands, CheckerRefusesWhatIsWrong) {
  const auto check = [](const std::string& line, bool inline_code = false) {
    ShownCommand command;
    EXPECT_TRUE(find_command(line, "test", inline_code, command)) << line;
    return check_command(command);
  };
  EXPECT_NE(check("build/trainlab run --scenario mlp --no-such-flag"), "");
  EXPECT_NE(check("trainlab nosuch --scenario mlp"), "");
  EXPECT_NE(check("trainlab run --scenario mlp --steps"), "");           // a value missing
  EXPECT_NE(check("trainlab run --scenario mlp --precision bf16 --fail-on high"), "");  // profile's flag on run
  EXPECT_NE(check("trainlab compare"), "");                              // a code block needs the arguments
  EXPECT_NE(check("trainlab model add x.py:f --input-style sideways"), "");
  EXPECT_EQ(check("trainlab compare", true), "");                        // inline code may only name it
  EXPECT_EQ(check("build/trainlab run --scenario mlp --steps N --results DIR"), "");  // placeholders
  EXPECT_EQ(check("trainlab diagnose results/<run-id> --fail-on high # a comment --no-such"), "");
  EXPECT_EQ(check("TRAINLAB_MAX_TRACE_GB=64 trainlab diagnose big.json.gz | head"), "");
  EXPECT_EQ(check("torchrun --nproc_per_node 2 --no-python build/trainlab run --scenario mlp"), "");
  EXPECT_EQ(check("trainlab profile -- python train.py --not-ours"), "");  // after --: the user's command
  EXPECT_EQ(check("trainlab --version"), "");
  EXPECT_NE(check("trainlab run --scenario mlp --repeat banana"), "");  // not a placeholder: its value counts
  ShownCommand not_run;
  EXPECT_FALSE(find_command("cmake --build build --target trainlab trainlab-train", "test", false, not_run));
  EXPECT_FALSE(find_command("build/trainlab ... --format json", "test", false, not_run));
}

TEST(DocsCommands, ShellWordsEndAtOperatorsAndComments) {
  EXPECT_EQ(shell_words("a 'b c' \"d\" # e"), (std::vector<std::string>{"a", "b c", "d"}));
  EXPECT_EQ(shell_words("a b | c"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(shell_words("a b 2>&1"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(shell_words("a b > out"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(shell_words("a results/<run-id> c"), (std::vector<std::string>{"a", "results/<run-id>", "c"}));
  EXPECT_EQ(shell_words("a x:int64[8,64]:0..999 && b"), (std::vector<std::string>{"a", "x:int64[8,64]:0..999"}));
}

// Each subcommand's --help ends with two or three examples, each a command that parses and that its
// docs page shows.
TEST(DocsCommands, HelpExamplesAreTheDocsPages) {
  std::vector<std::pair<std::string, std::string>> footers;  // subcommand path, footer
  with_command_line([&](CLI::App& app) {
    for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      footers.emplace_back(sub->get_name(), sub->get_footer());
      for (CLI::App* nested : sub->get_subcommands([](CLI::App*) { return true; })) {
        footers.emplace_back(sub->get_name() + " " + nested->get_name(), nested->get_footer());
      }
    }
  });
  ASSERT_GE(footers.size(), 12u);  // eleven subcommands and `model add`
  const std::regex page_line("Examples \\((docs/[a-z_]+\\.md)\\):");
  for (const auto& [name, footer] : footers) {
    std::smatch page;
    ASSERT_TRUE(std::regex_search(footer, page, page_line)) << name << "'s --help has no examples:\n" << footer;
    std::set<std::string> shown;
    for (const ShownCommand& c : commands_in(fs::path(TRAINLAB_SOURCE_DIR) / page[1].str())) {
      if (!c.inline_code) shown.insert(normalised(c.text()));
    }
    std::istringstream in(footer);
    int examples = 0;
    for (std::string line; std::getline(in, line);) {
      const size_t start = line.find("trainlab ");
      if (start == std::string::npos || line.find("Examples") != std::string::npos) continue;
      ++examples;
      ShownCommand command;
      ASSERT_TRUE(find_command(line, name + " --help", false, command));
      EXPECT_EQ(check_command(command), "") << name << " --help: " << line;
      EXPECT_EQ(shown.count(normalised(line.substr(start))), 1u)
          << name << " --help shows '" << line.substr(start) << "', which " << page[1] << " does not";
    }
    EXPECT_GE(examples, 2) << name;
    EXPECT_LE(examples, 3) << name;
  }
}

}  // namespace
}  // namespace trainlab
