package receipttest

import (
	"reflect"
	"testing"
	"time"
)

// Filled returns a value of type T with every field, at every depth, set to something other
// than its zero value: pointers point, slices and maps hold one element, strings and numbers
// are not empty. A copy made of it shows each field it missed.
func Filled[T any](t testing.TB) T {
	t.Helper()
	var v T
	fill(t, reflect.ValueOf(&v).Elem(), 0)
	return v
}

func fill(t testing.TB, v reflect.Value, depth int) {
	t.Helper()
	if depth > 8 {
		t.Fatalf("receipttest: %s nests too deep to fill", v.Type())
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(7)
	case reflect.String:
		v.SetString("x")
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(t, s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(t, k, depth+1)
		fill(t, e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() { // its fields are unexported
			v.Set(reflect.ValueOf(time.Unix(7, 0)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(t, v.Field(i), depth+1)
			}
		}
	case reflect.Interface:
		v.Set(reflect.ValueOf(map[string]any{"x": "x"}))
	default:
		t.Fatalf("receipttest: cannot fill a %s", v.Type())
	}
}

// NoSharing fails the test when cp, a deep copy of orig, differs from it or shares memory
// with it: a pointer, slice or map of the one reachable from the other.
func NoSharing(t testing.TB, orig, cp any) {
	t.Helper()
	if !reflect.DeepEqual(orig, cp) {
		t.Errorf("the copy differs:\n%#v\n%#v", cp, orig)
	}
	apart(t, reflect.ValueOf(orig), reflect.ValueOf(cp), reflect.TypeOf(orig).String())
}

func apart(t testing.TB, a, b reflect.Value, where string) {
	t.Helper()
	switch a.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
		if a.IsNil() || b.IsNil() {
			return
		}
		if a.UnsafePointer() == b.UnsafePointer() {
			t.Errorf("%s is shared by the copy", where)
			return
		}
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !a.IsNil() && !b.IsNil() {
			apart(t, a.Elem(), b.Elem(), where)
		}
	case reflect.Slice:
		for i := range min(a.Len(), b.Len()) {
			apart(t, a.Index(i), b.Index(i), where+"[i]")
		}
	case reflect.Map:
		for _, k := range a.MapKeys() {
			if bv := b.MapIndex(k); bv.IsValid() {
				apart(t, a.MapIndex(k), bv, where+"[k]")
			}
		}
	case reflect.Struct:
		for i := range a.NumField() {
			if a.Type().Field(i).IsExported() {
				apart(t, a.Field(i), b.Field(i), where+"."+a.Type().Field(i).Name)
			}
		}
	}
}
