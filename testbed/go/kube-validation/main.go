// Command kube-validation answers, line by line, what Kubernetes' own CronJob validation
// (k8s.io/kubernetes/pkg/apis/batch/validation, as kube-apiserver runs it on create) says of a
// schedule and a time zone. The stack file's health checks are refused at preview by a Python
// model of the same rules; tests/engine compare that model with this program's answers.
//
// Input: one JSON object per line, {"schedule": "...", "timeZone": "..." or null}.
// Output: one JSON object per line, {"schedule": [errors], "timeZone": [errors]}.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	// As kube-apiserver does: time zones resolve without the host's zone database.
	_ "time/tzdata"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/apis/batch"
	"k8s.io/kubernetes/pkg/apis/batch/validation"
	core "k8s.io/kubernetes/pkg/apis/core"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
)

type question struct {
	Schedule string  `json:"schedule"`
	TimeZone *string `json:"timeZone"`
}

type answer struct {
	Schedule []string `json:"schedule"`
	TimeZone []string `json:"timeZone"`
}

func judge(q question) answer {
	job := &batch.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "health", Namespace: "default"},
		Spec: batch.CronJobSpec{
			Schedule:          q.Schedule,
			TimeZone:          q.TimeZone,
			ConcurrencyPolicy: batch.ForbidConcurrent,
			JobTemplate: batch.JobTemplateSpec{
				Spec: batch.JobSpec{Template: core.PodTemplateSpec{}},
			},
		},
	}
	out := answer{Schedule: []string{}, TimeZone: []string{}}
	// Only the two fields asked about: the rest of this minimal CronJob is not under test.
	for _, err := range validation.ValidateCronJobCreate(job, corevalidation.PodValidationOptions{}) {
		switch err.Field {
		case "spec.schedule":
			out.Schedule = append(out.Schedule, err.Error())
		case "spec.timeZone":
			out.TimeZone = append(out.TimeZone, err.Error())
		}
	}
	return out
}

func main() {
	scanner := bufio.NewScanner(os.Stdin)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	writer := bufio.NewWriter(os.Stdout)
	defer writer.Flush()
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if line == "" {
			continue
		}
		var q question
		if err := json.Unmarshal([]byte(line), &q); err != nil {
			fmt.Fprintf(os.Stderr, "kube-validation: not a question: %v\n", err)
			os.Exit(2)
		}
		encoded, err := json.Marshal(judge(q))
		if err != nil {
			fmt.Fprintf(os.Stderr, "kube-validation: %v\n", err)
			os.Exit(2)
		}
		fmt.Fprintln(writer, string(encoded))
	}
	if err := scanner.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "kube-validation: %v\n", err)
		os.Exit(2)
	}
}
