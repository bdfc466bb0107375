package generate_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/loam-dev/loam/kubetest/internal/generate"
	"github.com/loam-dev/loam/kubetest/internal/memcached"
)

// everything is a schema with each constraint the generator honours.
func everything() *apiextensionsv1.JSONSchemaProps {
	str := func(p apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps { p.Type = "string"; return p }
	raw := func(vs ...string) []apiextensionsv1.JSON {
		var out []apiextensionsv1.JSON
		for _, v := range vs {
			out = append(out, apiextensionsv1.JSON{Raw: []byte(v)})
		}
		return out
	}
	item := apiextensionsv1.JSONSchemaProps{
		Type:     "object",
		Required: []string{"name", "port"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"name": str(apiextensionsv1.JSONSchemaProps{Pattern: `^[a-z]([-a-z0-9]*[a-z0-9])?$`, MaxLength: ptr.To[int64](15)}),
			"port": {Type: "integer", Format: "int32", Minimum: ptr.To(1.0), Maximum: ptr.To(65535.0)},
		},
	}
	return &apiextensionsv1.JSONSchemaProps{
		Type:     "object",
		Required: []string{"size", "image", "mode", "ports"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"size":     {Type: "integer", Format: "int32", Minimum: ptr.To(1.0), Maximum: ptr.To(3.0)},
			"even":     {Type: "integer", Minimum: ptr.To(0.0), ExclusiveMinimum: true, Maximum: ptr.To(100.0), MultipleOf: ptr.To(2.0)},
			"ratio":    {Type: "number", Minimum: ptr.To(0.0), Maximum: ptr.To(1.0), ExclusiveMaximum: true},
			"quarter":  {Type: "number", MultipleOf: ptr.To(0.25), Minimum: ptr.To(-1.0), Maximum: ptr.To(1.0)},
			"image":    str(apiextensionsv1.JSONSchemaProps{MinLength: ptr.To[int64](1), MaxLength: ptr.To[int64](63)}),
			"mode":     str(apiextensionsv1.JSONSchemaProps{Enum: raw(`"fast"`, `"safe"`)}),
			"level":    {Type: "integer", Enum: raw(`1`, `5`, `10`)},
			"version":  str(apiextensionsv1.JSONSchemaProps{Pattern: `^v[0-9]+\.[0-9]+(\.[0-9]+)?$`}),
			"email":    str(apiextensionsv1.JSONSchemaProps{Pattern: `^[^@\s]+@[a-z]+\.(com|org)$`}),
			"since":    str(apiextensionsv1.JSONSchemaProps{Format: "date-time"}),
			"day":      str(apiextensionsv1.JSONSchemaProps{Format: "date"}),
			"every":    str(apiextensionsv1.JSONSchemaProps{Format: "duration"}),
			"enabled":  {Type: "boolean"},
			"target":   {XIntOrString: true, AnyOf: []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}}},
			"tags":     {Type: "array", XListType: ptr.To("set"), MinItems: ptr.To[int64](1), MaxItems: ptr.To[int64](4), Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string", Enum: raw(`"a"`, `"b"`, `"c"`, `"d"`, `"e"`)}}},
			"ports":    {Type: "array", XListType: ptr.To("map"), XListMapKeys: []string{"name"}, MinItems: ptr.To[int64](2), Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &item}},
			"labels":   {Type: "object", MinProperties: ptr.To[int64](1), MaxProperties: ptr.To[int64](2), AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &apiextensionsv1.JSONSchemaProps{Type: "string", MaxLength: ptr.To[int64](5)}}},
			"extra":    {Type: "object", XPreserveUnknownFields: ptr.To(true)},
			"optional": {Type: "object", MinProperties: ptr.To[int64](2), Properties: map[string]apiextensionsv1.JSONSchemaProps{"a": {Type: "boolean"}, "b": {Type: "boolean"}, "c": {Type: "boolean"}}},
		},
	}
}

// accepts validates v against s as the API server validates a custom
// resource's value, and returns what it refuses.
func accepts(t *testing.T, s *apiextensionsv1.JSONSchemaProps, v any) field.ErrorList {
	t.Helper()
	var internal apiextensions.JSONSchemaProps
	require.NoError(t, apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(s, &internal, nil))
	validator, _, err := validation.NewSchemaValidator(&internal)
	require.NoError(t, err)
	// The API server validates what it decoded from JSON.
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var decoded any
	require.NoError(t, json.Unmarshal(b, &decoded))
	return validation.ValidateCustomResource(field.NewPath("spec"), decoded, validator)
}

func TestValue_is_accepted_by_the_API_server_s_validation(t *testing.T) {
	crd, err := memcached.Resource("generate.loam.dev").CRD()
	require.NoError(t, err)
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	for _, tc := range []struct {
		name   string
		schema *apiextensionsv1.JSONSchemaProps
	}{
		{"every constraint", everything()},
		{"the Memcached spec", &spec},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NotEmpty(t, accepts(t, tc.schema, map[string]any{"size": 4, "unknown": true}), "the validation refuses a wrong value")
			present := map[string]int{}
			const seeds = 300
			for seed := range uint64(seeds) {
				v, err := generate.New(seed).Value(tc.schema)
				require.NoError(t, err, "seed %d", seed)
				require.Empty(t, accepts(t, tc.schema, v), "seed %d: %#v", seed, v)
				for k := range v.(map[string]any) {
					present[k]++
				}
			}
			// Optional properties come and go; required ones are always
			// there.
			for name := range tc.schema.Properties {
				require.Positive(t, present[name], "%s never generated", name)
				if !slices.Contains(tc.schema.Required, name) {
					require.Less(t, present[name], seeds, "optional %s always generated", name)
				}
			}
		})
	}
}

func TestValue_follows_from_the_seed(t *testing.T) {
	a, err := generate.New(7).Value(everything())
	require.NoError(t, err)
	b, err := generate.New(7).Value(everything())
	require.NoError(t, err)
	require.Equal(t, a, b)
	c, err := generate.New(8).Value(everything())
	require.NoError(t, err)
	require.NotEqual(t, a, c)
}

func TestValue_names_a_schema_it_can_t_satisfy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema apiextensionsv1.JSONSchemaProps
		want   string
	}{
		{"bounds that contradict", apiextensionsv1.JSONSchemaProps{Type: "object", Required: []string{"n"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"n": {Type: "integer", Minimum: ptr.To(5.0), Maximum: ptr.To(4.0)},
		}}, ".n: no integer within [5, 4]"},
		{"a length that contradicts", apiextensionsv1.JSONSchemaProps{Type: "string", MinLength: ptr.To[int64](3), MaxLength: ptr.To[int64](2)},
			"the schema's root: maxLength 2 is below minLength 3"},
		{"too few distinct items", apiextensionsv1.JSONSchemaProps{Type: "array", XListType: ptr.To("set"), MinItems: ptr.To[int64](3),
			Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "boolean"}}},
			"the schema's root: could make only 2 distinct items of"},
		{"no type", apiextensionsv1.JSONSchemaProps{}, `the schema's root: type "": want object, array, string, integer, number or boolean`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := generate.New(1).Value(&tc.schema)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// FuzzValue_pattern hands the generator any pattern and length bounds: it
// never panics, and a string it returns matches the pattern within the
// bounds.
func FuzzValue_pattern(f *testing.F) {
	f.Add(`^[a-z]([-a-z0-9]*[a-z0-9])?$`, int64(0), int64(63), uint64(1))
	f.Add(`^v[0-9]+\.[0-9]+$`, int64(3), int64(8), uint64(2))
	f.Add(`\bword\b|(?i)CaSe`, int64(1), int64(10), uint64(3))
	f.Add(`[^\x00-\x{10FFFF}]`, int64(0), int64(5), uint64(4))
	f.Fuzz(func(t *testing.T, pattern string, minLength, maxLength int64, seed uint64) {
		minLength, maxLength = minLength%100, maxLength%100
		s := &apiextensionsv1.JSONSchemaProps{Type: "string", Pattern: pattern, MinLength: &minLength, MaxLength: &maxLength}
		v, err := generate.New(seed).Value(s)
		if err != nil {
			return
		}
		re := regexp.MustCompile(pattern)
		str, ok := v.(string)
		require.True(t, ok, "a %T", v)
		require.True(t, re.MatchString(str), "%q doesn't match %q", str, pattern)
		n := int64(len([]rune(str)))
		require.True(t, n >= minLength && n <= maxLength, "%q is not %d to %d characters", str, minLength, maxLength)
	})
}

func TestSteps_are_valid_where_they_come_and_re_create(t *testing.T) {
	names := []string{"a", "b", "c"}
	steps, err := generate.New(3).Steps(everything(), names, 400)
	require.NoError(t, err)
	require.Len(t, steps, 400)
	present := map[string]bool{}
	specs := map[string]map[string]any{}
	counts := map[generate.Op]int{}
	recreates := 0
	deleted := map[string]bool{}
	for i, s := range steps {
		counts[s.Op]++
		switch s.Op {
		case generate.Create:
			require.False(t, present[s.Name], "step %d: %v of an object that is there", i, s)
			if deleted[s.Name] {
				recreates++
			}
			present[s.Name] = true
		case generate.Update, generate.Delete:
			require.True(t, present[s.Name], "step %d: %v of an object that isn't there", i, s)
			if s.Op == generate.Delete {
				delete(present, s.Name)
				deleted[s.Name] = true
			}
		}
		if s.Op == generate.Delete {
			require.Nil(t, s.Spec)
		} else {
			require.Empty(t, accepts(t, everything(), s.Spec), "step %d: %v", i, s)
			if s.Op == generate.Update {
				require.NotEqual(t, specs[s.Name], s.Spec, "step %d: an update that changes nothing", i)
			}
			specs[s.Name] = s.Spec
		}
	}
	require.Greater(t, counts[generate.Update], counts[generate.Delete])
	require.Positive(t, counts[generate.Create])
	require.Positive(t, recreates)

	again, err := generate.New(3).Steps(everything(), names, 400)
	require.NoError(t, err)
	require.Equal(t, steps, again, "the same seed, the same steps")
	require.Equal(t, `delete a`, generate.Step{Op: generate.Delete, Name: "a"}.String())
	require.Equal(t, `update b {"size":2}`, generate.Step{Op: generate.Update, Name: "b", Spec: map[string]any{"size": 2}}.String())

	_, err = generate.New(1).Steps(everything(), nil, 1)
	require.EqualError(t, err, "no names to make steps for")
}

func TestRefer_draws_a_field_from_the_names_it_is_given(t *testing.T) {
	s := &apiextensionsv1.JSONSchemaProps{Type: "object", Required: []string{"configMap", "auth"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"configMap": {Type: "string", Pattern: `^[a-z]+$`},
		"auth": {Type: "object", Required: []string{"secretName"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"secretName": {Type: "string", Pattern: `^[a-z]+$`},
		}},
	}}
	g := generate.New(5).Refer("configMap", []string{"flags", "more-flags"}).Refer("auth.secretName", []string{"token"})
	counts := map[string]int{}
	secrets := map[string]int{}
	for range 300 {
		v, err := g.Value(s)
		require.NoError(t, err)
		m := v.(map[string]any)
		counts[m["configMap"].(string)]++
		secrets[m["auth"].(map[string]any)["secretName"].(string)]++
	}
	// Each name a third of the time, and one none has a third.
	require.InDelta(t, 100, counts["flags"], 30)
	require.InDelta(t, 100, counts["more-flags"], 30)
	require.InDelta(t, 150, secrets["token"], 30)
	require.Greater(t, len(counts), 10, "names none of the objects has come up too")

	// Without Refer, the same seed makes what it made before.
	plain, err := generate.New(5).Value(s)
	require.NoError(t, err)
	again, err := generate.New(5).Refer("elsewhere", []string{"x"}).Value(s)
	require.NoError(t, err)
	require.Equal(t, plain, again, "a path that isn't there changes no draw")
}
