#include "history/event_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <concepts>
#include <limits>
#include <string_view>
#include <tuple>
#include <utility>

#include "core/leftover_cost.h"
#include "core/unique_fd.h"

namespace gpuclean::history {
namespace {

// The writer waits this long for a lock before an append fails (and is retried by its caller):
// a reader holding the file never delays the recorder more. Readers wait longer.
constexpr int kWriterBusyMs = 100;
constexpr int kReaderBusyMs = 2000;
// Size pruning deletes the oldest events, at least this many at a time, until under the limit.
constexpr std::int64_t kMinPruneBatch = 100;
// Where a prune over --max-size stops: this share of it.
constexpr double kPruneTo = 0.95;
// The writer remembers this many boot, command and process ids (then starts afresh).
constexpr std::size_t kMaxCachedIds = 4096;

constexpr const char* kSchema = R"sql(
CREATE TABLE boots (
  id INTEGER PRIMARY KEY,
  boot_id TEXT NOT NULL UNIQUE
);
CREATE TABLE commands (
  id INTEGER PRIMARY KEY,
  argv BLOB NOT NULL UNIQUE
);
CREATE TABLE processes (
  id INTEGER PRIMARY KEY,
  boot INTEGER NOT NULL REFERENCES boots(id),
  pid INTEGER NOT NULL,
  start_ticks INTEGER NOT NULL,
  user TEXT NOT NULL,
  argv INTEGER NOT NULL REFERENCES commands(id),
  owner TEXT NOT NULL,
  parent_pid INTEGER,
  parent_start_ticks INTEGER,
  parent_argv INTEGER NOT NULL REFERENCES commands(id),
  appeared REAL,
  left REAL,
  UNIQUE (boot, pid, start_ticks)
);
CREATE INDEX processes_by_left ON processes(left);
CREATE INDEX processes_by_pid ON processes(pid);
CREATE INDEX processes_by_parent ON processes(parent_pid, parent_start_ticks);
CREATE TABLE events (
  id INTEGER PRIMARY KEY,
  time REAL NOT NULL,
  kind TEXT NOT NULL,
  process INTEGER REFERENCES processes(id),
  gpu INTEGER,
  bytes INTEGER,
  class TEXT NOT NULL,
  detail TEXT NOT NULL
);
CREATE INDEX events_by_time ON events(time);
CREATE INDEX events_by_process ON events(process);
)sql";

// SQLite's failure in its own words, with the errno a caller decides on (event_store.h):
// EBADMSG for a file that is not (or no longer) a sound database, ENOSPC, EROFS, EBUSY.
int errno_of(sqlite3* db, int code) {
  switch (code & 0xff) {
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
    case SQLITE_PERM:
      return sqlite3_system_errno(db);  // the OS's own: ENOENT, EACCES, EIO, …
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return EBADMSG;
    case SQLITE_FULL:
      return ENOSPC;
    case SQLITE_READONLY:
      return EROFS;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return EBUSY;
    default:
      return 0;
  }
}

Error sqlite_error(sqlite3* db, const std::string& what) {
  if (db == nullptr) return Error{ENOMEM, what};
  return Error{errno_of(db, sqlite3_extended_errcode(db)), what + ": " + sqlite3_errmsg(db)};
}

std::string join_argv(const std::vector<std::string>& argv) {
  std::string joined;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (i > 0) joined += '\0';
    joined += argv[i];
  }
  return joined;
}

// What a process's command line may take in the database: a user's 1 MiB command lines filled
// a size-capped database and pushed out everyone else's history (issue 49). Beyond it, the
// rest is one last argument that says its length and a hash (FNV-1a), to tell two apart.
constexpr std::size_t kMaxStoredArgvBytes = 4096;

std::string stored_argv(const std::vector<std::string>& argv) {
  std::string joined = join_argv(argv);
  if (joined.size() <= kMaxStoredArgvBytes) return joined;
  std::uint64_t hash = 14695981039346656037ull;
  for (const char c : joined) {
    hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  }
  const std::size_t length = joined.size();
  joined.resize(kMaxStoredArgvBytes);
  joined += '\0';
  std::string hex(16, '0');
  char digits[16];
  const auto end = std::to_chars(digits, digits + sizeof(digits), hash, 16).ptr;
  const auto count = static_cast<std::size_t>(end - digits);
  hex.replace(16 - count, count, digits, count);
  joined += "…[" + std::to_string(length) + " bytes in all, fnv1a " + hex + "]";
  return joined;
}

std::vector<std::string> split_argv(std::string_view joined) {
  std::vector<std::string> argv;
  if (joined.empty()) return argv;
  std::size_t start = 0;
  while (true) {
    const std::size_t nul = joined.find('\0', start);
    argv.emplace_back(joined.substr(start, nul - start));
    if (nul == std::string_view::npos) break;
    start = nul + 1;
  }
  return argv;
}

// One prepared statement; bind and read by 1-based (bind) and 0-based (column) index.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) stmt_ = nullptr;
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() { sqlite3_finalize(stmt_); }

  [[nodiscard]] bool ok() const { return stmt_ != nullptr; }
  template <std::integral T>
  void bind(int i, T value) {
    sqlite3_bind_int64(stmt_, i, static_cast<std::int64_t>(value));
  }
  void bind(int i, double value) { sqlite3_bind_double(stmt_, i, value); }
  // Text, or with `blob` the bytes as a BLOB.
  void bind(int i, const std::string& text, bool blob = false) {
    const auto size = static_cast<int>(text.size());
    if (blob) {
      sqlite3_bind_blob(stmt_, i, text.data(), size, SQLITE_TRANSIENT);
    } else {
      sqlite3_bind_text(stmt_, i, text.data(), size, SQLITE_TRANSIENT);
    }
  }
  // An absent value binds NULL.
  template <typename T>
  void bind(int i, const std::optional<T>& value) {
    if (value) {
      bind(i, static_cast<std::int64_t>(*value));
    } else {
      sqlite3_bind_null(stmt_, i);
    }
  }
  // Binds `values` to ?1, ?2, … in turn.
  template <typename... T>
  void bind_all(const T&... values) {
    int i = 0;
    (bind(++i, values), ...);
  }
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int step() { return sqlite3_step(stmt_); }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  [[nodiscard]] bool is_null(int i) const { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }
  [[nodiscard]] std::int64_t integer(int i) const { return sqlite3_column_int64(stmt_, i); }
  [[nodiscard]] double real(int i) const { return sqlite3_column_double(stmt_, i); }
  // The column's bytes, valid until the next step: for comparing before copying.
  [[nodiscard]] std::string_view view(int i) const {
    const auto* data = static_cast<const char*>(sqlite3_column_blob(stmt_, i));
    return data == nullptr
               ? std::string_view()
               : std::string_view(data, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, i)));
  }
  [[nodiscard]] std::string text(int i) const {
    const auto* data = static_cast<const char*>(sqlite3_column_blob(stmt_, i));
    return data == nullptr
               ? std::string()
               : std::string(data, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, i)));
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

Status exec(sqlite3* db, const char* sql, const std::string& what) {
  if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) return sqlite_error(db, what);
  return Ok{};
}

// The processes whose events a prune deleted, noted by a trigger of the writer's connection
// (temporary: never in the file), so that only they are checked for events left. A check of
// every process row was 350 ms of a week-full database's prune (bench/recorder_bench.sh).
Status prepare_pruning(sqlite3* db) {
  return exec(db,
              "CREATE TEMP TABLE IF NOT EXISTS pruned_processes (id INTEGER PRIMARY KEY);"
              "CREATE TEMP TRIGGER IF NOT EXISTS note_pruned_process AFTER DELETE ON main.events"
              " WHEN old.process IS NOT NULL BEGIN"
              " INSERT OR IGNORE INTO pruned_processes VALUES (old.process); END",
              "prepare pruning");
}

// Processes whose every event was pruned, then the commands and boots no process names any
// more.
Status delete_orphans(sqlite3* db) {
  if (Status processes = exec(db,
                              "DELETE FROM processes WHERE id IN (SELECT id FROM pruned_processes) "
                              "AND NOT EXISTS (SELECT 1 FROM events e WHERE e.process = "
                              "processes.id); DELETE FROM pruned_processes",
                              "prune processes without events");
      !processes.ok()) {
    return processes;
  }
  return exec(db,
              "DELETE FROM commands WHERE id NOT IN (SELECT argv FROM processes) AND "
              "id NOT IN (SELECT parent_argv FROM processes); DELETE FROM boots WHERE id NOT IN "
              "(SELECT boot FROM processes)",
              "prune command lines and boots without processes");
}

Result<std::int64_t> single_integer(sqlite3* db, const char* sql) {
  Statement statement(db, sql);
  if (!statement.ok() || statement.step() != SQLITE_ROW) return sqlite_error(db, sql);
  return statement.integer(0);
}

// The writer's file: its directory made 0700 when missing, the file created 0600 here (SQLite
// would create it 0644 less the umask), never through a symlink.
Status prepare_file(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    const std::string dir = path.substr(0, slash);
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return errno_error("create the history directory " + dir);
    }
    struct stat dir_stat {};
    if (::stat(dir.c_str(), &dir_stat) != 0)
      return errno_error("stat the history directory " + dir);
    if (!S_ISDIR(dir_stat.st_mode)) {
      return Error{ENOTDIR, "the history directory " + dir + " is not a directory"};
    }
    // A directory another user can write lets them plant the -wal or -shm file (a link, a
    // forged journal) or swap the database (issue 49): only root's or the writer's own, and
    // writable by its owner alone.
    if (dir_stat.st_uid != 0 && dir_stat.st_uid != ::geteuid()) {
      return Error{EACCES, "the history directory " + dir + " belongs to uid " +
                               std::to_string(dir_stat.st_uid) +
                               ", not to root or this user: refusing to keep history there"};
    }
    if ((dir_stat.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
      return Error{EACCES, "the history directory " + dir +
                               " is writable by other users: refusing to keep history there "
                               "(chmod go-w it, or choose another --db)"};
    }
  }
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return errno_error("open the history database " + path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return errno_error("stat the history database " + path);
  if (!S_ISREG(st.st_mode)) return Error{0, path + " is not a regular file"};
  return Ok{};
}

// EBADMSG when `path` has content that does not start with SQLite's header string; an empty or
// missing file passes (a new database, or SQLite's own error).
Status check_database_header(const std::string& path) {
  static constexpr std::string_view kMagic{"SQLite format 3\0", 16};
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd) return Ok{};
  char head[16] = {};
  const ssize_t got = ::read(fd.get(), head, sizeof(head));
  if (got <= 0) return Ok{};
  if (std::string_view(head, static_cast<std::size_t>(got)) == kMagic) return Ok{};
  return Error{EBADMSG, path + " is not a gpuclean history database: not an SQLite file"};
}

// The argv of the row before, kept: a timeline's rows mostly repeat a few command lines, and
// splitting each again was a good part of reading a day (bench/recorder_bench.sh).
struct SplitCache {
  std::string joined;
  std::vector<std::string> argv;
  const std::vector<std::string>& split(std::string_view text) {
    if (text != joined || (argv.empty() && !text.empty())) {
      argv = split_argv(text);
      joined.assign(text);
    }
    return argv;
  }
};

RecordedProcess process_from_row(const Statement& row, int first, SplitCache* argv_cache = nullptr,
                                 SplitCache* parent_cache = nullptr) {
  RecordedProcess process;
  process.boot_id = row.text(first);
  process.pid = static_cast<Pid>(row.integer(first + 1));
  process.start_ticks = static_cast<std::uint64_t>(row.integer(first + 2));
  process.user = row.text(first + 3);
  process.argv = argv_cache != nullptr ? argv_cache->split(row.view(first + 4))
                                       : split_argv(row.text(first + 4));
  process.owner = row.text(first + 5);
  if (!row.is_null(first + 6)) process.parent_pid = static_cast<Pid>(row.integer(first + 6));
  if (!row.is_null(first + 7)) {
    process.parent_start_ticks = static_cast<std::uint64_t>(row.integer(first + 7));
  }
  process.parent_argv = parent_cache != nullptr ? parent_cache->split(row.view(first + 8))
                                                : split_argv(row.text(first + 8));
  return process;
}

// The columns process_from_row reads, and the joins they need (p: processes).
constexpr const char* kProcessColumns =
    "b.boot_id, p.pid, p.start_ticks, p.user, c.argv, p.owner, p.parent_pid, "
    "p.parent_start_ticks, pc.argv";
constexpr const char* kProcessJoins =
    " JOIN boots b ON b.id = p.boot JOIN commands c ON c.id = p.argv"
    " JOIN commands pc ON pc.id = p.parent_argv";

}  // namespace

struct EventStore::Impl {
  sqlite3* db = nullptr;
  // The writer's statements, prepared once (an append is one transaction per look).
  std::unique_ptr<Statement> insert_event, insert_process, find_process, insert_boot, find_boot,
      insert_command, find_command, mark_appeared, mark_left;
  // Ids already known: a process's events refer to its row, a command line and a boot are
  // stored once however many processes share them.
  std::map<std::string, std::int64_t> boot_ids;
  std::map<std::string, std::int64_t> command_ids;
  std::map<std::tuple<std::string, Pid, std::uint64_t>, std::int64_t> process_ids;
  // close_v2 waits for the statements, finalized just after (the members go after the body).
  ~Impl() { sqlite3_close_v2(db); }

  Status prepare_writer();
  Result<std::int64_t> text_row(std::map<std::string, std::int64_t>& cache, Statement& insert,
                                Statement& find, const std::string& value, bool blob) const;
  Result<std::int64_t> process_row(const RecordedProcess& process);
  void forget_cached_ids() {
    boot_ids.clear();
    command_ids.clear();
    process_ids.clear();
  }
  Result<std::vector<HeldAt>> open_processes(double time, const std::string* boot_id) const;
};

EventStore::EventStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
EventStore::EventStore(EventStore&&) noexcept = default;
EventStore& EventStore::operator=(EventStore&&) noexcept = default;
EventStore::~EventStore() = default;

Result<EventStore> EventStore::open(const std::string& path, bool read_only) {
  if (!read_only) {
    if (Status made = prepare_file(path); !made.ok()) return made.error();
  }
  // A file that is not a database is said so before SQLite opens it: SQLite, on the way to
  // failing, deletes a -wal beside it, whose frames may be the newest events (issue 49), and
  // the recorder moves the file aside with its WAL.
  if (Status header = check_database_header(path); !header.ok()) return header.error();
  auto impl = std::make_unique<Impl>();
  const int flags = (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) |
                    SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX;  // one thread per store
  if (sqlite3_open_v2(path.c_str(), &impl->db, flags, nullptr) != SQLITE_OK) {
    return sqlite_error(impl->db, "open the history database " + path);
  }
  sqlite3_busy_timeout(impl->db, read_only ? kReaderBusyMs : kWriterBusyMs);
  // The first read of the file: a file that is not a database fails here.
  auto version = single_integer(impl->db, "PRAGMA user_version");
  if (!version.ok()) {
    return Error{version.error().errnum,
                 path + " is not a gpuclean history database: " + version.error().context};
  }
  if (*version > kSchemaVersion) {
    return Error{0, path + " has schema version " + std::to_string(*version) +
                        ", newer than this gpuclean's " + std::to_string(kSchemaVersion)};
  }
  if (*version == 0 && read_only) return Error{0, path + " holds no history yet"};
  if (*version == 0) {
    // auto_vacuum must be set before the first table exists.
    const std::string create = std::string("PRAGMA auto_vacuum = INCREMENTAL; BEGIN;") + kSchema +
                               "PRAGMA user_version = " + std::to_string(kSchemaVersion) +
                               "; COMMIT;";
    if (Status made = exec(impl->db, create.c_str(), "create the schema of " + path); !made.ok()) {
      return made.error();
    }
  }
  if (!read_only) {
    if (Status wal = exec(impl->db, "PRAGMA journal_mode = WAL", "set WAL mode on " + path);
        !wal.ok()) {
      return wal.error();
    }
    // Added after schema 1 was first written, for a dead job's tree (each_leftover_event): a
    // database of an earlier gpuclean gets it when its recorder next opens it (readers of any
    // version ignore it; without it the report reads the same, slower).
    if (Status indexed = exec(impl->db,
                              "CREATE INDEX IF NOT EXISTS processes_by_parent ON "
                              "processes(parent_pid, parent_start_ticks)",
                              "index the parents of " + path);
        !indexed.ok()) {
      return indexed.error();
    }
  }
  return EventStore(std::move(impl));
}

Status EventStore::Impl::prepare_writer() {
  if (insert_event) return Ok{};
  auto make = [this](std::unique_ptr<Statement>& statement, const char* sql) {
    statement = std::make_unique<Statement>(db, sql);
    return statement->ok();
  };
  const bool made =
      make(insert_event,
           "INSERT INTO events (time, kind, process, gpu, bytes, class, detail) "
           "VALUES (?, ?, ?, ?, ?, ?, ?)") &&
      make(insert_process,
           "INSERT OR IGNORE INTO processes (boot, pid, start_ticks, user, argv, owner, "
           "parent_pid, parent_start_ticks, parent_argv) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)") &&
      make(find_process,
           "SELECT id FROM processes WHERE boot = ? AND pid = ? AND start_ticks = ?") &&
      make(insert_boot, "INSERT OR IGNORE INTO boots (boot_id) VALUES (?)") &&
      make(find_boot, "SELECT id FROM boots WHERE boot_id = ?") &&
      make(insert_command, "INSERT OR IGNORE INTO commands (argv) VALUES (?)") &&
      make(find_command, "SELECT id FROM commands WHERE argv = ?") &&
      make(mark_appeared,
           "UPDATE processes SET appeared = ?2 WHERE id = ?1 AND appeared IS NULL") &&
      make(mark_left, "UPDATE processes SET left = ?2 WHERE id = ?1");
  if (!made) {
    Error error = sqlite_error(db, "prepare the writer's statements");
    insert_event.reset();
    return error;
  }
  return Ok{};
}

Result<std::int64_t> EventStore::Impl::text_row(std::map<std::string, std::int64_t>& cache,
                                                Statement& insert, Statement& find,
                                                const std::string& value, bool blob) const {
  if (const auto known = cache.find(value); known != cache.end()) return known->second;
  for (Statement* statement : {&insert, &find}) statement->bind(1, value, blob);
  const int inserted = insert.step();
  insert.reset();
  if (inserted != SQLITE_DONE) {
    find.reset();
    return sqlite_error(db, "write a boot or command row");
  }
  const int found = find.step();
  const std::int64_t id = find.integer(0);
  find.reset();
  if (found != SQLITE_ROW) return sqlite_error(db, "find a boot or command row");
  if (cache.size() >= kMaxCachedIds) cache.clear();
  cache.emplace(value, id);
  return id;
}

Result<std::int64_t> EventStore::Impl::process_row(const RecordedProcess& process) {
  const auto key = std::make_tuple(process.boot_id, process.pid, process.start_ticks);
  if (const auto known = process_ids.find(key); known != process_ids.end()) return known->second;
  auto boot = text_row(boot_ids, *insert_boot, *find_boot, process.boot_id, false);
  if (!boot.ok()) return boot.error();
  auto argv =
      text_row(command_ids, *insert_command, *find_command, stored_argv(process.argv), true);
  if (!argv.ok()) return argv.error();
  auto parent_argv =
      text_row(command_ids, *insert_command, *find_command, stored_argv(process.parent_argv), true);
  if (!parent_argv.ok()) return parent_argv.error();
  Statement& insert = *insert_process;
  insert.bind_all(*boot, process.pid, process.start_ticks, process.user, *argv, process.owner,
                  process.parent_pid, process.parent_start_ticks, *parent_argv);
  const int inserted = insert.step();
  insert.reset();
  if (inserted != SQLITE_DONE) return sqlite_error(db, "write a process row");
  Statement& find = *find_process;
  find.bind_all(*boot, process.pid, process.start_ticks);
  const int found = find.step();
  const std::int64_t id = find.integer(0);
  find.reset();
  if (found != SQLITE_ROW) return sqlite_error(db, "find a process row");
  if (process_ids.size() >= kMaxCachedIds) process_ids.clear();
  process_ids.emplace(key, id);
  return id;
}

Status EventStore::append(const std::vector<HistoryEvent>& events) {
  sqlite3* db = impl_->db;
  if (Status prepared = impl_->prepare_writer(); !prepared.ok()) return prepared;
  if (Status begun = exec(db, "BEGIN IMMEDIATE", "begin writing events"); !begun.ok()) {
    return begun;
  }
  Statement& insert = *impl_->insert_event;
  bool written = true;
  for (const HistoryEvent& event : events) {
    std::optional<std::int64_t> process;
    if (event.process) {
      auto row = impl_->process_row(*event.process);
      if (!row.ok()) {
        written = false;
        break;
      }
      process = *row;
      // When it appeared and left, on its row: "who held it at T" reads those alone.
      Statement* mark = event.kind == HistoryEventKind::kAppeared ? impl_->mark_appeared.get()
                        : event.kind == HistoryEventKind::kLeft   ? impl_->mark_left.get()
                                                                  : nullptr;
      if (mark != nullptr) {
        mark->bind_all(*process, event.time);
        written = mark->step() == SQLITE_DONE;
        mark->reset();
        if (!written) break;
      }
    }
    insert.bind_all(event.time, std::string(to_string(event.kind)), process, event.gpu, event.bytes,
                    event.klass, event.detail);
    written = insert.step() == SQLITE_DONE;
    insert.reset();
    if (!written) break;
  }
  if (!written) {
    Error error = sqlite_error(db, "write events");
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    impl_->forget_cached_ids();  // rows made in the transaction are gone with it
    return error;
  }
  return exec(db, "COMMIT", "commit events");
}

namespace {

// Every event with its process: the columns each_event_row reads, in its order.
std::string event_select() {
  return std::string("SELECT e.time, e.kind, e.gpu, e.bytes, e.class, e.detail, ") +
         "e.process IS NOT NULL, " + kProcessColumns + ", e.id" +
         " FROM events e LEFT JOIN processes p ON p.id = e.process"
         " LEFT JOIN boots b ON b.id = p.boot LEFT JOIN commands c ON c.id = p.argv"
         " LEFT JOIN commands pc ON pc.id = p.parent_argv";
}

// Hands each row of an event_select() statement to `each` as an event.
Status each_event_row(sqlite3* db, Statement& select,
                      const std::function<void(const HistoryEvent&)>& each) {
  SplitCache argv_cache;
  SplitCache parent_cache;
  int step = 0;
  while ((step = select.step()) == SQLITE_ROW) {
    HistoryEvent event;
    event.id = select.integer(16);  // after the 7 event and 9 process columns
    event.time = select.real(0);
    const auto kind = history_event_kind_from_string(select.view(1));
    if (!kind)
      return Error{0, "the history database has an event of unknown kind '" + select.text(1) + "'"};
    event.kind = *kind;
    if (!select.is_null(2)) event.gpu = static_cast<unsigned>(select.integer(2));
    if (!select.is_null(3)) event.bytes = static_cast<Bytes>(select.integer(3));
    event.klass = select.text(4);
    event.detail = select.text(5);
    if (select.integer(6) != 0) {
      event.process = process_from_row(select, 7, &argv_cache, &parent_cache);
    }
    each(event);
  }
  if (step != SQLITE_DONE) return sqlite_error(db, "read the timeline");
  return Ok{};
}

}  // namespace

Result<std::vector<HistoryEvent>> EventStore::events(const EventQuery& query) const {
  std::vector<HistoryEvent> events;
  Status read =
      each_event(query, [&events](const HistoryEvent& event) { events.push_back(event); });
  if (!read.ok()) return read.error();
  return events;
}

Status EventStore::each_event(const EventQuery& query,
                              const std::function<void(const HistoryEvent&)>& each) const {
  sqlite3* db = impl_->db;
  // Only the conditions asked for, each with its own parameter: a condition written as
  // "?1 IS NULL OR e.time >= ?1" keeps SQLite from using the time index (a day out of a week
  // read the whole table: bench/recorder_bench.sh).
  std::string where = " WHERE 1";
  if (query.since) where += " AND e.time >= ?1";
  if (query.until) where += " AND e.time < ?2";
  if (query.pid) where += " AND e.process IN (SELECT id FROM processes WHERE pid = ?3)";
  if (query.gpu) where += " AND (e.gpu = ?4 OR e.gpu IS NULL)";
  if (query.owner) where += " AND e.process IN (SELECT id FROM processes WHERE owner = ?6)";
  if (query.after_id) where += " AND e.id > ?7";
  if (!query.kinds.empty()) {
    // The kinds' own names, never text from outside: written into the statement as they are.
    where += " AND e.kind IN (";
    for (std::size_t i = 0; i < query.kinds.size(); ++i) {
      where += std::string(i == 0 ? "'" : ", '") + to_string(query.kinds[i]) + "'";
    }
    where += ")";
  }
  const std::string sql = event_select() + where + " ORDER BY e.time, e.id LIMIT ?5";
  Statement select(db, sql.c_str());
  if (!select.ok()) return sqlite_error(db, "prepare the timeline query");
  if (query.since) select.bind(1, *query.since);
  if (query.until) select.bind(2, *query.until);
  if (query.pid) select.bind(3, static_cast<std::int64_t>(*query.pid));
  if (query.gpu) select.bind(4, static_cast<std::int64_t>(*query.gpu));
  select.bind(5, static_cast<std::int64_t>(query.limit));
  if (query.owner) select.bind(6, *query.owner);
  if (query.after_id) select.bind(7, *query.after_id);
  return each_event_row(db, select, each);
}

bool EventStore::indexes_parents() const {
  Statement index(impl_->db,
                  "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = "
                  "'processes_by_parent'");
  return index.ok() && index.step() == SQLITE_ROW;
}

Status EventStore::each_leftover_event(double until,
                                       const std::function<void(const HistoryEvent&)>& each) const {
  sqlite3* db = impl_->db;
  // The processes recorded in a leftover class (kLeftoverClasses) before `until` and those
  // descending from them, then all of
  // their events and the node's own that the report counts. The leftovers are found by one
  // scan of the table (NOT INDEXED: SQLite's choice, a walk of events_by_process, took 137 ms
  // instead of 100 on the week-full bench database of 1.2 million events); then two selects,
  // each on events_by_process, not one OR that reads every event by time.
  std::string classes;
  for (std::string_view klass : kLeftoverClasses) {
    classes += std::string(classes.empty() ? "'" : ", '") + std::string(klass) + "'";
  }
  // A dead job is a tree: the holders that descend from a leftover, through the parents
  // recorded, are read with it, one lookup each in processes_by_parent. Without that index (a
  // database no recorder has opened since it was added) each step of the recursion would scan
  // every process (more than 45 s on the week-full bench database): the leftovers alone are read.
  const std::string descendants =
      indexes_parents()
          ? " UNION SELECT c.id FROM leftover l JOIN processes r ON r.id = l.id JOIN processes c "
            "ON c.parent_pid = r.pid AND c.parent_start_ticks = r.start_ticks AND c.boot = r.boot"
          : "";
  const std::string sql =
      "WITH RECURSIVE leftover(id) AS (SELECT process FROM events NOT INDEXED WHERE kind IN "
      "('appeared', 'class_changed') AND class IN (" +
      classes + ") AND time < ?1 AND process IS NOT NULL" + descendants + ") " + event_select() +
      " WHERE e.time < ?1 AND e.process IN (SELECT id FROM leftover) UNION ALL " + event_select() +
      " WHERE e.time < ?1 AND e.process IS NULL AND e.kind IN ('unattributed_appeared', "
      "'unattributed_cleared', 'action', 'recorder_started', 'recorder_stopped') ORDER BY 1, 17";
  Statement select(db, sql.c_str());
  if (!select.ok()) return sqlite_error(db, "prepare the leftovers query");
  select.bind(1, until);
  return each_event_row(db, select, each);
}

Result<std::vector<HeldAt>> EventStore::Impl::open_processes(double time,
                                                             const std::string* boot_id) const {
  // A process is open at TIME when it appeared by then and has not left by then (the times on
  // its row: processes_by_left finds those still open and those that left after TIME); its
  // class is its latest appeared/class_changed event, its memory its latest memory_changed per
  // GPU.
  const std::string open_where = " AND p.appeared <= ?1 AND (?2 IS NULL OR b.boot_id = ?2)";
  const std::string sql = std::string("SELECT p.id, ") + kProcessColumns + " FROM processes p" +
                          kProcessJoins + " WHERE p.left IS NULL" + open_where +
                          " UNION ALL SELECT p.id, " + kProcessColumns + " FROM processes p" +
                          kProcessJoins + " WHERE p.left > ?1" + open_where;
  // No ORDER BY: SQLite would walk processes by PID (an index) instead of by `left`, and read
  // them all; sorted below.
  Statement select(db, sql.c_str());
  Statement klass(db,
                  "SELECT class FROM events WHERE process = ? AND time <= ? AND kind IN "
                  "('appeared', 'class_changed') ORDER BY time DESC, id DESC LIMIT 1");
  Statement memory(db,
                   "SELECT gpu, bytes FROM events e WHERE process = ?1 AND kind = "
                   "'memory_changed' AND time <= ?2 AND id = (SELECT MAX(id) FROM events f WHERE "
                   "f.process = ?1 AND f.kind = 'memory_changed' AND f.gpu = e.gpu AND f.time <= "
                   "?2) ORDER BY gpu");
  Statement activity(db,
                     "SELECT detail FROM events WHERE process = ? AND time <= ? AND kind = "
                     "'activity_changed' ORDER BY time DESC, id DESC LIMIT 1");
  if (!select.ok() || !klass.ok() || !memory.ok() || !activity.ok()) {
    return sqlite_error(db, "prepare the holders query");
  }
  select.bind(1, time);
  if (boot_id != nullptr) select.bind(2, *boot_id);
  std::vector<HeldAt> held;
  int step = 0;
  while ((step = select.step()) == SQLITE_ROW) {
    HeldAt entry;
    entry.process = process_from_row(select, 1);
    const std::int64_t id = select.integer(0);
    klass.bind_all(id, time);
    if (klass.step() == SQLITE_ROW) entry.klass = klass.text(0);
    klass.reset();
    memory.bind_all(id, time);
    while (memory.step() == SQLITE_ROW) {
      if (memory.is_null(0) || memory.is_null(1)) continue;
      entry.gpu_memory[static_cast<unsigned>(memory.integer(0))] =
          static_cast<Bytes>(memory.integer(1));
    }
    memory.reset();
    activity.bind_all(id, time);
    if (activity.step() == SQLITE_ROW) entry.activity = activity.text(0);
    activity.reset();
    held.push_back(std::move(entry));
  }
  if (step != SQLITE_DONE) return sqlite_error(db, "read the holders");
  std::sort(held.begin(), held.end(), [](const HeldAt& a, const HeldAt& b) {
    return a.process.pid != b.process.pid ? a.process.pid < b.process.pid
                                          : a.process.start_ticks < b.process.start_ticks;
  });
  return held;
}

Result<std::vector<HeldAt>> EventStore::held_at(double time) const {
  return impl_->open_processes(time, nullptr);
}

Result<std::vector<HeldAt>> EventStore::still_open(const std::string& boot_id) const {
  return impl_->open_processes(std::numeric_limits<double>::max(), &boot_id);
}

Result<std::uint64_t> EventStore::data_bytes() const {
  auto pages = single_integer(impl_->db, "PRAGMA page_count");
  auto free_pages = single_integer(impl_->db, "PRAGMA freelist_count");
  auto page_size = single_integer(impl_->db, "PRAGMA page_size");
  if (!pages.ok()) return pages.error();
  if (!free_pages.ok()) return free_pages.error();
  if (!page_size.ok()) return page_size.error();
  return static_cast<std::uint64_t>((*pages - *free_pages) * *page_size);
}

namespace {

// One batch of the size limit's pruning, oldest first within a tier, the first tier that has
// any (issue 49: oldest first whoever wrote them let 40 holders of one user erase the
// recorder's start and root's records): the holder events of the user with the most events
// (a flood is its own first victim), then the other users', then root's, and last the events
// of no process (the recorder's own, actions, Xids, unattributed memory).
// The user other than root with the most holder events: the first to lose events when the
// database is over its size (a flood is its own first victim). Empty when there is none. A
// GROUP BY over every event (256 ms of a week-full database): asked once per prune.
Result<std::string> busiest_user(sqlite3* db) {
  Statement top(db,
                "SELECT p.user FROM events e JOIN processes p ON p.id = e.process WHERE "
                "p.user != 'root' GROUP BY p.user ORDER BY COUNT(*) DESC LIMIT 1");
  if (!top.ok()) return sqlite_error(db, "prepare the busiest user's query");
  const int step = top.step();
  if (step == SQLITE_DONE) return std::string();
  if (step != SQLITE_ROW) return sqlite_error(db, "find the busiest user");
  return top.text(0);
}

// Deletes the oldest `batch` events of the first tier that has any: the busiest user's holder
// events, other users', root's, then events of no process. The number deleted.
Result<std::uint64_t> prune_batch(sqlite3* db, std::int64_t batch, const std::string& busiest) {
  const std::string limit = " ORDER BY e.time, e.id LIMIT ?1)";
  const std::string holders =
      "DELETE FROM events WHERE id IN (SELECT e.id FROM events e JOIN processes p ON p.id = "
      "e.process WHERE ";
  const std::string tiers[] = {
      holders + "p.user = ?2" + limit,
      holders + "p.user != 'root'" + limit,
      holders + "1" + limit,
      "DELETE FROM events WHERE id IN (SELECT e.id FROM events e WHERE 1" + limit,
  };
  for (std::size_t i = busiest.empty() ? 1 : 0; i < std::size(tiers); ++i) {
    Statement cut(db, tiers[i].c_str());
    if (!cut.ok()) return sqlite_error(db, "prepare pruning the oldest events");
    cut.bind(1, static_cast<std::int64_t>(batch));
    if (i == 0) cut.bind(2, busiest);
    if (cut.step() != SQLITE_DONE) return sqlite_error(db, "prune the oldest events");
    if (const auto changed = static_cast<std::uint64_t>(sqlite3_changes64(db)); changed > 0) {
      return changed;
    }
  }
  return std::uint64_t{0};
}

}  // namespace

Result<std::uint64_t> EventStore::prune(double before, std::uint64_t max_bytes) {
  sqlite3* db = impl_->db;
  // A pruned process, command or boot row's id is free again (INTEGER PRIMARY KEY takes the
  // highest free one): no cached id is trusted across a prune (issue 49: the next event for a
  // cached id landed on another process's row).
  impl_->forget_cached_ids();
  if (Status prepared = prepare_pruning(db); !prepared.ok()) return prepared.error();
  std::uint64_t deleted = 0;
  Statement by_age(db, "DELETE FROM events WHERE time < ?");
  if (!by_age.ok()) return sqlite_error(db, "prepare pruning");
  by_age.bind(1, before);
  if (by_age.step() != SQLITE_DONE) return sqlite_error(db, "prune old events");
  deleted += static_cast<std::uint64_t>(sqlite3_changes64(db));
  // Over the limit, down to kPruneTo of it: a full database is pruned once per few percent of
  // new data, not after every write.
  const auto target = static_cast<std::uint64_t>(static_cast<double>(max_bytes) * kPruneTo);
  std::optional<std::string> busiest;
  while (true) {
    auto size = data_bytes();
    if (!size.ok()) return size.error();
    if (*size <= (busiest ? target : max_bytes)) break;
    if (!busiest) {
      auto user = busiest_user(db);
      if (!user.ok()) return user.error();
      busiest = std::move(*user);
    }
    auto count = single_integer(db, "SELECT COUNT(*) FROM events");
    if (!count.ok()) return count.error();
    // The share of the events that is over the target, at least a small batch: a fixed large
    // batch overshoots (deleting 5,000 of 15,000 events to get 4% under would lose a third).
    const auto over = static_cast<double>(*size - target) / static_cast<double>(*size);
    const auto batch = std::max<std::int64_t>(
        kMinPruneBatch, static_cast<std::int64_t>(over * static_cast<double>(*count)) + 1);
    auto changed = prune_batch(db, batch, *busiest);
    if (!changed.ok()) return changed.error();
    deleted += *changed;
    // A process row goes with its last event, and a command line with its last process: the
    // size counts every table (a flood's size is its command lines).
    if (Status orphans = delete_orphans(db); !orphans.ok()) return orphans.error();
    if (*changed == 0) break;  // nothing left to delete: the schema alone is over the limit
  }
  if (Status orphans = delete_orphans(db); !orphans.ok()) return orphans.error();
  // The freed pages leave the file, and the WAL's copy of them is folded in and emptied: only
  // then is the space the file system's again.
  if (Status vacuum = exec(db, "PRAGMA incremental_vacuum; PRAGMA wal_checkpoint(TRUNCATE)",
                           "give pruned space back");
      !vacuum.ok()) {
    return vacuum.error();
  }
  return deleted;
}

namespace {

// The row of the process (boot, PID, start ticks): the UNIQUE index finds it, never a scan of
// every event of that PID (issue 49: a PID-only filter under the timeline's LIMIT read the
// oldest 100,000 events, and `status --db` said idle for 185,401 s instead of 10 s).
constexpr const char* kProcessRow =
    "SELECT p.id FROM processes p JOIN boots b ON b.id = p.boot"
    " WHERE b.boot_id = ?1 AND p.pid = ?2 AND p.start_ticks = ?3";

}  // namespace

Result<std::optional<double>> EventStore::idle_since(const std::string& boot_id, Pid pid,
                                                     std::uint64_t start_ticks) const {
  sqlite3* db = impl_->db;
  // Its newest activity change, one row by the events' process index.
  Statement latest(db,
                   (std::string("SELECT time, detail FROM events WHERE process = (") + kProcessRow +
                    ") AND kind = 'activity_changed' ORDER BY time DESC, id DESC LIMIT 1")
                       .c_str());
  if (!latest.ok()) return sqlite_error(db, "prepare the idle query");
  latest.bind_all(boot_id, pid, start_ticks);
  const int step = latest.step();
  if (step == SQLITE_DONE) return std::optional<double>();
  if (step != SQLITE_ROW) return sqlite_error(db, "read the idle query");
  if (latest.view(1) != "idle") return std::optional<double>();
  return std::optional<double>(latest.real(0));
}

Result<std::optional<RecordedParent>> EventStore::recorded_parent(const std::string& boot_id,
                                                                  Pid pid,
                                                                  std::uint64_t start_ticks) const {
  sqlite3* db = impl_->db;
  // The parent is the process row's; when it was seen orphaned, its first such class change.
  Statement row(db, (std::string("SELECT p.parent_pid, pc.argv, (SELECT MIN(e.time) FROM events e"
                                 " WHERE e.process = p.id AND e.kind = 'class_changed' AND"
                                 " e.class = 'orphan') FROM processes p"
                                 " JOIN commands pc ON pc.id = p.parent_argv"
                                 " WHERE p.id = (") +
                     kProcessRow + ")")
                        .c_str());
  if (!row.ok()) return sqlite_error(db, "prepare the parent query");
  row.bind_all(boot_id, pid, start_ticks);
  const int step = row.step();
  if (step == SQLITE_DONE) return std::optional<RecordedParent>();
  if (step != SQLITE_ROW) return sqlite_error(db, "read the parent query");
  if (row.is_null(0)) return std::optional<RecordedParent>();
  RecordedParent parent{static_cast<Pid>(row.integer(0)), split_argv(row.text(1)), {}};
  if (!row.is_null(2)) parent.gone_by = row.real(2);
  return std::optional<RecordedParent>(std::move(parent));
}

}  // namespace gpuclean::history
