/*
 * The pause process of a pod sandbox: PID 1 of the pod's namespaces, holding them open while the pod's
 * containers come and go. It sleeps until a signal arrives, reaps any child that was reparented to it
 * (it is the pid namespace's init when the pod shares one), and exits on SIGINT or SIGTERM.
 * Built static (`gcc -Os -static`) so the image needs no libc: image/kube/images.sh.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig) {
  (void)sig;
  _exit(0);
}

static void on_child(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

static int handle(int sig, void (*fn)(int)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = fn;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  return sigaction(sig, &sa, NULL);
}

int main(int argc, char **argv) {
  if (argc > 1 && (strcmp(argv[1], "-v") == 0 || strcmp(argv[1], "--version") == 0)) {
    puts("pause (machined) " PAUSE_VERSION);
    return 0;
  }
  if (getpid() != 1) fputs("pause: warning: not running as PID 1\n", stderr);
  if (handle(SIGINT, on_stop) || handle(SIGTERM, on_stop) || handle(SIGCHLD, on_child)) {
    perror("pause: sigaction");
    return 1;
  }
  for (;;) pause();
}
