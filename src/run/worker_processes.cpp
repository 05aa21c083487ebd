#include "run/worker_processes.h"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "parallel/parallel_for.h"
#include "host/signal_names.h"

namespace attncheck {

namespace {

// Exit status of a worker whose work threw: reported by the parent as such.
constexpr int kExitWorkThrew = 3;

// What a worker sends: a header {kind, item, value}; an answer's value is its
// size, and its bytes follow.
enum : uint64_t { kAnswer = 0, kProgress = 1 };

// This process's end of the socket when it is a worker, else -1; and the item it works on.
int g_worker_sock = -1;
uint64_t g_worker_item = 0;
std::chrono::steady_clock::time_point g_last_progress{};

bool send_all(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    // MSG_NOSIGNAL: a peer that died is an answer, not a SIGPIPE.
    const ssize_t r = send(fd, p, n, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

bool receive_all(int fd, void* data, std::size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t r = recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

// The worker's side: items in, answers out, until the parent closes its end.
[[noreturn]] void serve(int sock, const std::function<std::string(std::size_t)>& work,
                        const std::function<void()>& worker_exit) {
  ScopedComputeThreads one(1);
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  g_worker_sock = sock;
  for (;;) {
    uint64_t item = 0;
    if (!receive_all(sock, &item, sizeof item)) break;
    g_worker_item = item;
    g_last_progress = std::chrono::steady_clock::now();
    std::string answer;
    try {
      answer = work(static_cast<std::size_t>(item));
    } catch (...) {
      _exit(kExitWorkThrew);
    }
    const uint64_t header[3] = {kAnswer, item, answer.size()};
    if (!send_all(sock, header, sizeof header) || !send_all(sock, answer.data(), answer.size())) break;
  }
  if (worker_exit) worker_exit();
  _exit(0);
}

struct Worker {
  pid_t pid = -1;
  int sock = -1;            // the parent's end
  bool busy = false;
  std::size_t item = 0;     // what it works on, when busy
};

// Ends and reaps every worker still there (on success they have all exited).
class Workers {
 public:
  ~Workers() {
    for (Worker& w : all)
      if (w.sock >= 0) close(w.sock);
    for (Worker& w : all)
      if (w.pid > 0) {
        kill(w.pid, SIGKILL);
        while (waitpid(w.pid, nullptr, 0) < 0 && errno == EINTR) {
        }
      }
  }
  std::vector<Worker> all;
};

std::string how_it_ended(Worker& w) {
  int status = 0;
  pid_t r;
  while ((r = waitpid(w.pid, &status, 0)) < 0 && errno == EINTR) {
  }
  w.pid = -1;
  if (r < 0) return "it could not be waited for";
  if (WIFEXITED(status) && WEXITSTATUS(status) == kExitWorkThrew) return "its work threw an exception";
  return wait_status_description(status);
}

}  // namespace

void report_worker_progress(uint64_t count) {
  if (g_worker_sock < 0) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - g_last_progress < std::chrono::milliseconds(200)) return;
  g_last_progress = now;
  const uint64_t header[3] = {kProgress, g_worker_item, count};
  send_all(g_worker_sock, header, sizeof header);  // a lost note is no loss: the answer follows
}

bool run_in_worker_processes(std::size_t items, int workers, const std::function<std::string(std::size_t)>& work,
                             const std::function<void()>& worker_exit,
                             const std::function<void(std::size_t, std::string)>& done,
                             const WorkerEvents& events) {
  if (items == 0) return true;
  if (workers < 1) workers = 1;
  const pid_t parent = getpid();
  std::fflush(nullptr);
  Workers pool;
  for (int k = 0; k < workers; ++k) {
    int socks[2];
    // SOCK_CLOEXEC: nothing a worker or a plugin host starts keeps them;
    // the plugin host's supervisor also closes every fd it does not own.
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, socks) != 0)
      throw std::runtime_error(std::string("--jobs: cannot create a worker's socket: ") + std::strerror(errno));
    const pid_t pid = fork();
    if (pid < 0) {
      close(socks[0]);
      close(socks[1]);
      throw std::runtime_error(std::string("--jobs: cannot start a worker process: ") + std::strerror(errno));
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(0);  // the parent died before the line above
      close(socks[0]);
      for (const Worker& w : pool.all) close(w.sock);  // the other workers' ends
      serve(socks[1], work, worker_exit);
    }
    close(socks[1]);
    pool.all.push_back({pid, socks[0]});
  }

  std::size_t next = 0, finished = 0;
  auto hand_out = [&](Worker& w) {
    if (next == items) {
      close(w.sock);  // no more work: the worker ends
      w.sock = -1;
      return;
    }
    const uint64_t item = next;
    if (!send_all(w.sock, &item, sizeof item))
      throw std::runtime_error("--jobs: a worker process ended before its work began: " + how_it_ended(w));
    w.busy = true;
    w.item = next++;
    if (events.handed) events.handed(w.item, static_cast<int>(&w - pool.all.data()));
  };
  const bool ticks = events.tick || events.stop;
  for (Worker& w : pool.all) hand_out(w);

  while (finished < items) {
    std::vector<pollfd> fds;
    std::vector<Worker*> who;
    for (Worker& w : pool.all)
      if (w.busy) {
        fds.push_back({w.sock, POLLIN, 0});
        who.push_back(&w);
      }
    const int polled = poll(fds.data(), fds.size(), ticks ? kTickMilliseconds : -1);
    if (events.stop && events.stop()) return false;  // ~Workers ends them all
    if (events.tick) events.tick();
    if (polled < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("--jobs: waiting for the workers failed: ") + std::strerror(errno));
    }
    for (std::size_t k = 0; k < fds.size(); ++k) {
      if (!fds[k].revents) continue;
      Worker& w = *who[k];
      uint64_t header[3] = {0, 0, 0};
      std::string answer;
      bool ok = receive_all(w.sock, header, sizeof header) && header[1] == w.item;
      if (ok && header[0] == kProgress) {
        if (events.progress) events.progress(w.item, static_cast<int>(&w - pool.all.data()), header[2]);
        continue;
      }
      if (ok) {
        ok = header[0] == kAnswer;
        answer.resize(ok ? header[2] : 0);
        ok = ok && receive_all(w.sock, answer.data(), answer.size());
      }
      // A worker that died because the run is being stopped is no bug.
      if (!ok && events.stop && events.stop()) return false;
      if (!ok)
        throw std::runtime_error("--jobs: a worker process ended while it checked (work item " +
                                 std::to_string(w.item) + "): " + how_it_ended(w) +
                                 "; this is a bug of attncheck's, please report it with the command line");
      w.busy = false;
      ++finished;
      done(w.item, std::move(answer));
      hand_out(w);
    }
  }
  // Every worker has had its end closed and leaves on its own: reap them.
  for (Worker& w : pool.all) {
    if (w.sock >= 0) {
      close(w.sock);
      w.sock = -1;
    }
    while (w.pid > 0 && waitpid(w.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    w.pid = -1;
  }
  return true;
}

}  // namespace attncheck
