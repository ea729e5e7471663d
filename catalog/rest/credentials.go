package rest

// What a reader needs to reach a table's files: the warehouse's storage
// properties without secrets, and the credentials a request's context
// carries (catalog.WithStorageCredentials), only in a LoadTableResult.

import (
	"context"
	"maps"
	"regexp"
	"strings"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/meterstore/meterstore/catalog"
)

// addStorageCredentials adds the credentials ctx carries to a
// LoadTableResult body whose metadata file is at loc.
func addStorageCredentials(ctx context.Context, body map[string]any, loc string) {
	creds := catalog.StorageCredentials(ctx)
	if len(creds) == 0 {
		return
	}
	body["storage-credentials"] = creds
	cfg, _ := body["config"].(map[string]string)
	if cfg == nil {
		cfg = map[string]string{}
		body["config"] = cfg
	}
	// The longest prefix wins, as in Iceberg's S3FileIO and PyIceberg.
	best := -1
	for i, c := range creds {
		if strings.HasPrefix(loc, c.Prefix) && (best < 0 || len(c.Prefix) > len(creds[best].Prefix)) {
			best = i
		}
	}
	if best >= 0 {
		maps.Copy(cfg, creds[best].Config)
	}
}

// s3ClientRegion is the property of Java's AWS clients (client.region)
// for the region that S3FileIO signs for; iceberg-go and PyIceberg read
// s3.region.
const s3ClientRegion = "client.region"

// storageDefaults returns the warehouse's file IO properties that hold no
// secret, under the names of iceberg-go and PyIceberg and of Java's
// S3FileIO: the endpoint, region and addressing style a reader needs to
// reach the files at all.
func storageDefaults(props map[string]string) map[string]string {
	cfg := withoutSecrets(props)
	// Java's S3FileIO knows path-style addressing and the region by other
	// names than iceberg-go and PyIceberg.
	if cfg[icebergio.S3ForceVirtualAddressing] == "false" {
		cfg[s3PathStyleAccess] = "true"
	}
	if r, ok := cfg[icebergio.S3Region]; ok {
		cfg[s3ClientRegion] = r
	}
	return cfg
}

// s3PathStyleAccess is the property of Java's S3FileIO for path-style
// requests.
const s3PathStyleAccess = "s3.path-style-access"

// secretKey matches the properties that hold credentials: access keys,
// secrets, session tokens, passwords.
var secretKey = regexp.MustCompile(`(?i)(secret|access-key|session-token|password|credential|token)`)

// withoutSecrets returns cfg without the properties secretKey matches.
func withoutSecrets(cfg map[string]string) map[string]string {
	out := make(map[string]string, len(cfg))
	for k, v := range cfg {
		if !secretKey.MatchString(k) {
			out[k] = v
		}
	}
	return out
}
