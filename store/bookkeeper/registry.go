package bookkeeper

import (
	"errors"
	"fmt"
	"net"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/formats/bkwirepb"
	"github.com/ledgermedic/ledgermedic/store"
)

// bookieRPC is the endpoint protocol of a bookie's v3/v2 RPC port in its
// BookieServiceInfo (BookieServiceInfo.RPC_ENDPOINT_PROTOCOL... "bookie-rpc").
const bookieRPC = "bookie-rpc"

// resolveBookie finds the host:port of a bookie id: the bookie-rpc endpoint of
// its registration under <root>/available (or available/readonly), else the id
// itself, which is host:port unless a bookieId was configured
// (DefaultBookieAddressResolver).
func resolveBookie(ms store.MetadataStore, root, id string) (string, error) {
	for _, p := range []string{root + "/available/" + id, root + "/available/readonly/" + id} {
		n, err := ms.Get(p)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("bookie %s: registry %s: %w", id, p, err)
		}
		if addr, ok, err := rpcEndpoint(n.Value); err != nil {
			return "", fmt.Errorf("bookie %s: registry %s: %w", id, p, err)
		} else if ok {
			return addr, nil
		}
		break // registered without an endpoint (older bookies): the id is the address
	}
	if _, port, err := net.SplitHostPort(id); err == nil {
		if _, err := strconv.ParseUint(port, 10, 16); err == nil {
			return id, nil
		}
	}
	return "", fmt.Errorf("bookie %s: not registered under %s/available and its id is not host:port", id, root)
}

// rpcEndpoint decodes a BookieServiceInfoFormat and returns its first bookie-rpc
// endpoint; ok is false for an empty value or one without such an endpoint.
func rpcEndpoint(v []byte) (string, bool, error) {
	if len(v) == 0 {
		return "", false, nil
	}
	var info bkwirepb.BookieServiceInfoFormat
	if err := (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(v, &info); err != nil {
		return "", false, fmt.Errorf("BookieServiceInfo does not decode: %w", err)
	}
	for _, e := range info.GetEndpoints() {
		if e.GetProtocol() == bookieRPC && e.GetHost() != "" && e.GetPort() > 0 && e.GetPort() < 65536 {
			return net.JoinHostPort(e.GetHost(), strconv.Itoa(int(e.GetPort()))), true, nil
		}
	}
	return "", false, nil
}
