package zk

import (
	"errors"
	"fmt"
	"strings"

	gozk "github.com/go-zookeeper/zk"

	"github.com/ledgermedic/ledgermedic/store"
)

// CreateSequential creates prefix+<sequence> as ZooKeeper's EPHEMERAL_SEQUENTIAL
// (or PERSISTENT_SEQUENTIAL) node, creating missing parents as empty persistent
// nodes as BookKeeper's ZkLedgerIdGenerator does (ZkUtils.asyncCreateFullPathOptimistic).
func (s *zkStore) CreateSequential(prefix string, ephemeral bool) (string, error) {
	if s.readOnly {
		return "", fmt.Errorf("create %s on zookeeper %s: %w", prefix, s.u, store.ErrReadOnly)
	}
	flags := int32(gozk.FlagSequence)
	if ephemeral {
		flags |= gozk.FlagEphemeral
	}
	defer s.marks.wrote(0)
	var created string
	create := func() error {
		var err error
		created, err = s.conn.Create(s.zkPath(prefix), []byte{}, flags, zkOpenACL)
		return err
	}
	err := s.within(create)
	if errors.Is(err, gozk.ErrNoNode) {
		if err = s.createPersistentPath(prefix[:strings.LastIndex(prefix, "/")]); err == nil {
			err = s.within(create)
		}
	}
	if err != nil {
		return "", fmt.Errorf("create %s on zookeeper %s: %w", prefix, s.hosts, s.writeError(err))
	}
	if s.chroot != "" {
		created = strings.TrimPrefix(created, s.chroot)
	}
	return created, nil
}

// createPersistentPath creates p and its missing ancestors as empty persistent nodes.
func (s *zkStore) createPersistentPath(p string) error {
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		part := p[:i]
		err := s.within(func() error {
			_, err := s.conn.Create(s.zkPath(part), []byte{}, gozk.FlagPersistent, zkOpenACL)
			return err
		})
		if err != nil && !errors.Is(err, gozk.ErrNodeExists) {
			return fmt.Errorf("create parent %s: %w", part, err)
		}
	}
	return nil
}

// Children lists a node's children.
func (s *zkStore) Children(path string) ([]string, error) {
	var kids []string
	err := s.within(func() error {
		var err error
		kids, _, err = s.conn.Children(s.zkPath(path))
		return err
	})
	if err != nil {
		return nil, s.readError(path, err)
	}
	return kids, nil
}
