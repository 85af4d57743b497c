# A stand-in for edenhill/kcat:1.7.1, the client of docker/compose.yaml, where no registry can be reached
# (tests/test_container_image.py): Debian's kcat 1.7.1 on the base image the tests build minibroker's image on.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends kcat \
 && rm -rf /var/lib/apt/lists/*
