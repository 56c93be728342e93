# In-cluster image: the slim build (tag noembedded) has no embedded control plane and
# watches the cluster it runs in through its pod's service account.
#   docker build -t gcscope .
# With no flags it listens on the pod's loopback only (reach it with
#   kubectl port-forward deploy/gcscope 8080); the Helm chart (charts/gcscope, docs/install.md)
# adds --listen=0.0.0.0:8443 with TLS and --auth=kubernetes, as gcscope requires off loopback.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -tags noembedded -trimpath \
      -ldflags "-s -w -X main.version=${VERSION}" -o /out/gcscope ./cmd/gcscope

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/gcscope /usr/local/bin/gcscope
COPY LICENSE /usr/share/doc/gcscope/LICENSE
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/gcscope", "--in-cluster"]
