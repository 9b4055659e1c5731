package controller

import (
	"encoding/json"
	"fmt"
	"reflect"

	"capn.dev/capn/pkg/provisioner/builders"
)

// ownedFields is what FieldManager's last apply left on live, as an apply
// configuration: the fields capn owns, with their live values. A field
// someone else changed since (kubectl edit, a controller) has changed
// hands and is missing, so comparing this with the desired object finds
// drift in what capn owns and ignores fields others own.
func ownedFields(live builders.Object) (any, error) {
	k, err := managedKindOf(live)
	if err != nil {
		return nil, fmt.Errorf("extracting owned fields: %w", err)
	}
	ac, err := k.owned(live)
	if err != nil {
		return nil, fmt.Errorf("extracting %s's fields from %s %s: %w", FieldManager, kindOf(live), live.GetName(), err)
	}
	return ac, nil
}

// ownsDesired reports whether capn's owned fields of live already are
// desired: then an apply would change nothing.
func ownsDesired(live, desired builders.Object) (bool, error) {
	return ownsDesiredAt(live, desired)
}

// ownsDesiredTemplate is ownsDesired for spec.template alone: false means
// applying desired would roll the workload's pods.
func ownsDesiredTemplate(live, desired builders.Object) (bool, error) {
	return ownsDesiredAt(live, desired, "spec", "template")
}

// ownsDesiredAt compares the owned fields of live with desired at path
// (the whole object when empty).
func ownsDesiredAt(live, desired builders.Object, path ...string) (bool, error) {
	owned, err := ownedFields(live)
	if err != nil {
		return false, err
	}
	a, err := normalized(owned)
	if err != nil {
		return false, err
	}
	b, err := normalized(desired)
	if err != nil {
		return false, err
	}
	return reflect.DeepEqual(dig(a, path), dig(b, path)), nil
}

func dig(v any, path []string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// normalized is v as JSON data without what an apply does not set:
// status, nulls, empty objects and lists (a null creationTimestamp), so a
// rendered object and an extracted one compare by the fields they carry.
func normalized(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	// The main resource's apply never sets status (the API server resets
	// it), but a typed object carries its zero status, some of it without
	// omitempty (StatefulSet's replicas).
	delete(out, "status")
	return prune(out), nil
}

func prune(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if p := prune(e); p == nil {
				delete(t, k)
			} else {
				t[k] = p
			}
		}
		if len(t) == 0 {
			return nil
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = prune(e)
		}
		if len(t) == 0 {
			return nil
		}
		return t
	}
	return v
}
