package rest_test

import (
	"github.com/meterstore/meterstore/internal/pgtest"
	"testing"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
