/* The sandbox ("pause") container of the kubelet node: holds the pod's namespaces until it is
 * told to stop, reaps orphaned children (it is PID 1 of a pod sharing its PID namespace), and
 * exits 0 on SIGTERM or SIGINT. Built with `gcc -static -O2` by pytest_lagscale.kube.images. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int signo) { (void)signo; _exit(0); }
static void reap(int signo) { (void)signo; while (waitpid(-1, NULL, WNOHANG) > 0) {} }

int main(void) {
    struct sigaction on_stop = {.sa_handler = stop}, on_child = {.sa_handler = reap};
    sigaction(SIGTERM, &on_stop, NULL);
    sigaction(SIGINT, &on_stop, NULL);
    sigaction(SIGCHLD, &on_child, NULL);
    for (;;) pause();
    return 0;
}
