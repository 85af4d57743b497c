/* The floor of one request/answer exchange on this machine, without Python: a single-connection epoll echo server.
 * request_cost.py compiles it (cc -O2) when a C compiler is present and times it like the broker.
 * Usage: echo_floor PORT  (listens on 127.0.0.1:PORT, serves one connection, exits when it closes). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s PORT\n", argv[0]);
        return 2;
    }
    int one = 1;
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listener, (struct sockaddr *)&address, sizeof address) != 0 || listen(listener, 1) != 0) {
        perror("echo_floor: bind/listen");
        return 1;
    }
    int connection = accept(listener, NULL, NULL);
    if (connection < 0) {
        perror("echo_floor: accept");
        return 1;
    }
    setsockopt(connection, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int poller = epoll_create1(0);
    struct epoll_event wanted = {.events = EPOLLIN, .data.fd = connection};
    epoll_ctl(poller, EPOLL_CTL_ADD, connection, &wanted);
    static char buffer[1 << 16];
    for (;;) {
        struct epoll_event ready;
        if (epoll_wait(poller, &ready, 1, -1) <= 0)
            continue;
        ssize_t got = recv(connection, buffer, sizeof buffer, 0);
        if (got == 0)
            return 0;
        for (ssize_t sent = 0; got > 0 && sent < got;) {
            ssize_t n = send(connection, buffer + sent, (size_t)(got - sent), 0);
            if (n < 0)
                return 1;
            sent += n;
        }
    }
}
