#include "tests/sim/journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace onset::sim {

std::string JournalEntry::Field(const std::string& key) const {
  auto it = fields.find(key);
  return it == fields.end() ? std::string() : it->second;
}

std::string JournalFile(const std::string& dir) { return dir + "/journal.log"; }
std::string LockDir(const std::string& dir) { return dir + "/locks"; }

void Append(const std::string& dir, const JournalEntry& entry) {
  std::string line = std::to_string(entry.at_unix_ms) + " " + entry.kind + " cell=" + entry.cell +
                     " attempt=" + std::to_string(entry.attempt) +
                     " pid=" + std::to_string(entry.pid);
  for (const auto& [key, value] : entry.fields) {
    std::string v = value;
    for (char& c : v) {
      if (c == ' ' || c == '\n') c = '_';
    }
    line += " " + key + "=" + v;
  }
  line += "\n";
  const int fd = ::open(JournalFile(dir).c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  (void)!::write(fd, line.data(), line.size());
  ::close(fd);
}

std::optional<JournalEntry> ParseJournalLine(const std::string& line) {
  std::istringstream in(line);
  JournalEntry e;
  if (!(in >> e.at_unix_ms >> e.kind)) return std::nullopt;
  std::string word;
  while (in >> word) {
    const size_t eq = word.find('=');
    if (eq == std::string::npos) return std::nullopt;
    const std::string key = word.substr(0, eq), value = word.substr(eq + 1);
    if (key == "cell") {
      e.cell = value;
    } else if (key == "attempt") {
      e.attempt = std::atoi(value.c_str());
    } else if (key == "pid") {
      e.pid = std::atoi(value.c_str());
    } else {
      e.fields[key] = value;
    }
  }
  return e;
}

std::vector<JournalEntry> ReadJournal(const std::string& dir) {
  std::vector<JournalEntry> entries;
  std::ifstream in(JournalFile(dir));
  std::string line;
  while (std::getline(in, line)) {
    if (std::optional<JournalEntry> e = ParseJournalLine(line)) entries.push_back(std::move(*e));
  }
  return entries;
}

}  // namespace onset::sim
